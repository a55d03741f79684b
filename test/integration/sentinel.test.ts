/**
 * A primary with a replica behind three Sentinels, reached through ioredis' own Sentinel support
 * (`new Redis({ sentinels, name })`): locks work as on one server, and a Sentinel failover while a
 * lock is held and another caller waits reaches neither caller as an error. The waiter still gets
 * the lock, fencing tokens keep rising, and a holder whose lock the failover lost (the promoted
 * replica had not received it) learns it from its lease's signal, not from a later call.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { type Lease, LockLostError, Mutex } from '../../src/index.js';
import { abortedWith, awaitedLater, until, within } from '../fixtures/helpers.js';
import { type SentinelSetup, startSentinels } from '../fixtures/redis-sentinel.js';

describe('Sentinel: ioredis with sentinels', () => {
  let setup: SentinelSetup;
  const clients: Redis[] = [];

  const client = () => {
    const made = new Redis({
      sentinels: [...setup.sentinels],
      name: setup.name,
      // Sentinel kills the demoted primary's connections; ioredis asks the Sentinels again.
      sentinelRetryStrategy: () => 50,
      retryStrategy: () => 50,
    });
    clients.push(made);
    return made;
  };

  before(async () => {
    setup = await startSentinels();
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    await setup?.stop();
  });

  test('a Mutex through a client that finds its primary by Sentinel: held, waited for, handed on', async () => {
    const a = new Mutex(client(), 'sentinel:basic', { ttlMs: 5_000 });
    const b = new Mutex(client(), 'sentinel:basic', { ttlMs: 5_000, maxLocalHolds: 1 });
    const first = await a.acquire();
    const waiting = b.acquire({ timeoutMs: 10_000 });
    assert.equal(await first.release(), true);
    const second = await waiting;
    assert.ok(second.fencingToken > first.fencingToken);
    assert.equal(await second.release(), true);
  });

  test('a failover while a lock is held and waited for: no error reaches either caller, the loss is signalled, tokens rise', async () => {
    const name = 'sentinel:failover';
    const holderClient = client();
    const waiterClient = client();
    const holderLock = new Mutex(holderClient, name, { ttlMs: 3_000 });
    const waiterLock = new Mutex(waiterClient, name, { ttlMs: 3_000 });
    const held = await holderLock.acquire();
    const lost = abortedWith(held.signal);
    const waiting = awaitedLater(waiterLock.acquire({ timeoutMs: 60_000 }));
    await until(async () => (await waiterClient.llen(waiterLock.keys.queue)) === 1, 'the waiter is queued');
    // The lock and the waiter's entry are on the replica before the failover starts (WAIT on the
    // waiter's own connection, which wrote the entry last).
    assert.equal(await waiterClient.call('WAIT', '1', '5000'), 1);
    await setup.failover();

    // Sentinel demotes the old primary seconds after promoting the replica (8 s or more), and the
    // holder's extensions in between went to the old primary: on the new one the lock expired a
    // TTL after the promotion. The holder hears it from its signal once its client reconnects.
    const reason = await within(lost, 30_000, "the holder's signal");
    assert.ok(reason instanceof LockLostError, `the lease's signal says why: ${String(reason)}`);
    assert.equal(await held.release(), false);

    const next: Lease = await within(waiting, 60_000, 'the waiter');
    assert.ok(
      next.fencingToken > held.fencingToken,
      `tokens rise across the failover: ${held.fencingToken} then ${next.fencingToken}`,
    );
    assert.equal(await next.release(), true);

    // And the lock works on the new primary from here on.
    const again = await holderLock.acquire();
    assert.ok(again.fencingToken > next.fencingToken);
    assert.equal(await again.release(), true);
  });
});
