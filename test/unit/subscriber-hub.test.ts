/**
 * The subscriber hub's hold on the process (src/adapters/subscriber-hub.ts), with a stub driver: a
 * connection it closes must not keep the process alive, whichever path closes it. (A closed GLIDE
 * client's socket stays open until GLIDE's core closes its end: referenced, it held a test file's
 * process, idle, for half an hour.)
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RedisDriver, SubscriberConnection } from '../../src/adapters/driver.js';
import { SubscriberHub } from '../../src/adapters/subscriber-hub.js';

/** A connection that records whether it holds the process, and whether it was closed. */
class StubConnection implements SubscriberConnection {
  alive = false;
  closed = false;
  constructor(private readonly refuse: boolean) {}
  async subscribe(channel: string): Promise<void> {
    if (this.refuse)
      throw new Error(`NOPERM this user has no permissions to access the '${channel}' channel`);
  }
  async unsubscribe(): Promise<void> {}
  keepAlive(alive: boolean): void {
    this.alive = alive;
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

function hubWith(connection: StubConnection, lingerMs = 1): SubscriberHub {
  const driver = { openSubscriber: async () => connection } as unknown as RedisDriver;
  return new SubscriberHub(driver, lingerMs);
}

/** Settles what the hub does after a connection's promise (its `then` callbacks). */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('SubscriberHub: a connection it closes holds no process', () => {
  test('closed after a refused SUBSCRIBE while a waiter was attached', async () => {
    const connection = new StubConnection(true);
    const hub = hubWith(connection);
    await assert.rejects(hub.watch('channel'), /NOPERM/);
    await settled();
    assert.equal(connection.closed, true, 'closed');
    assert.equal(connection.alive, false, 'and unreferenced');
  });

  test('closed once its last channel lingered out', async () => {
    const connection = new StubConnection(false);
    const hub = hubWith(connection);
    const watch = await hub.watch('channel');
    assert.equal(connection.alive, true, 'referenced while a waiter is attached');
    watch.close();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await settled();
    assert.equal(connection.closed, true, 'closed');
    assert.equal(connection.alive, false, 'and unreferenced');
  });

  test('closed by close() while a waiter is attached', async () => {
    const connection = new StubConnection(false);
    const hub = hubWith(connection);
    await hub.watch('channel');
    await hub.close();
    assert.equal(connection.closed, true, 'closed');
    assert.equal(connection.alive, false, 'and unreferenced');
  });
});
