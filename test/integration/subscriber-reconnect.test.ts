/**
 * The subscriber connection while it reconnects: waiters come and go (each one's arrival and the
 * last one's leaving tell the connection whether it may keep the process alive) while the server
 * keeps killing it (CLIENT KILL TYPE pubsub). Nothing may pile up on a socket that is gone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { contextFor } from '../../src/adapters/client-context.js';
import { hubFor } from '../../src/adapters/subscriber-hub.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';
import { clientKinds, ioredisKind } from '../fixtures/clients.js';
import { nameMaker, sleep, until, watchUnhandledRejections } from '../fixtures/helpers.js';

/** How many times the subscriber connection is killed: each kill is one reconnect window. */
const KILLS = 8;

let server: RedisServer;
before(async () => {
  server = await startRedis();
});
after(async () => {
  await server?.stop();
});

/** How many subscribers the server has on `channel` (PUBSUB NUMSUB). */
async function subscribers(channel: string): Promise<number> {
  const reply = await server.command('PUBSUB', 'NUMSUB', channel);
  return Number(reply.match(/:(\d+)\r\n$/)?.[1] ?? 0);
}

describe('waiters come and go while the subscriber connection reconnects', () => {
  const name = nameMaker('subscriber-reconnect');
  for (const kind of clientKinds) {
    test(`no MaxListenersExceededWarning (${kind.name})`, async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => {
        if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning);
      };
      process.on('warning', onWarning);
      const client = await kind.create(server.url);
      try {
        const hub = hubFor(contextFor(client.client));
        const channel = `${name()}:granted:test`;
        let held = await hub.watch(channel);
        for (let kill = 0; kill < KILLS; kill += 1) {
          await until(async () => (await subscribers(channel)) === 1, 'the channel is subscribed');
          // No waiter left: the connection may let the process exit (the channel lingers).
          held.close();
          await server.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
          // A waiter arrives and leaves, over and over, until the connection is back and subscribed.
          const deadline = performance.now() + 15_000;
          while ((await subscribers(channel)) === 0) {
            assert.ok(performance.now() < deadline, 'the subscriber came back within 15 s');
            const watch = hub.watchIfActive(channel) ?? (await hub.watch(channel));
            watch.close();
          }
          held = hub.watchIfActive(channel) ?? (await hub.watch(channel));
        }
        held.close();
        await hub.close();
        // Node reports the warning on the next tick after the listener that crossed the limit.
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(
          warnings.map((w) => w.message),
          [],
        );
      } finally {
        process.off('warning', onWarning);
        await client.close();
      }
    });
  }
});

describe('the subscriber connection lost again while it re-subscribes', () => {
  const name = nameMaker('resubscribe-lost');
  // ioredis' own re-subscribe after a reconnect (autoResubscribe) is a promise nobody handles: lost
  // with its connection and not sent again within the subscriber's maxRetriesPerRequest, it was an
  // unhandled MaxRetriesPerRequestError in the user's process (a fault worker crashed on one).
  test('ioredis: no unhandled rejection when the re-subscribe never gets its answer', async () => {
    const unhandled = watchUnhandledRejections();
    const proxy = await FaultProxy.start({ port: server.port });
    const client = await ioredisKind.create(proxy.url);
    try {
      const hub = hubFor(contextFor(client.client));
      const channel = `${name()}:granted:test`;
      const watch = await hub.watch(channel);
      // After a reset, the re-subscribe reaches the server but its answer never comes back: the
      // proxy holds it, and goes away for good as soon as the re-subscribe went through.
      let resubscribed!: () => void;
      const sent = new Promise<void>((resolve) => {
        resubscribed = resolve;
      });
      proxy.delay = (frame) => {
        if (!frame.pubsub) return 0;
        if (!frame.toClient) resubscribed();
        return 10_000;
      };
      proxy.resetAll();
      await sent;
      await proxy.close();
      // ioredis gives up on a queued command after maxRetriesPerRequest (3) reconnects: ~0.5 s.
      await sleep(1_500);
      watch.close();
      await hub.close();
      await sleep(50);
      assert.deepEqual(unhandled.reasons.map(String), []);
    } finally {
      unhandled.stop();
      await proxy.close().catch(() => {});
      await client.close();
    }
  });
});
