/**
 * Regression tests for the waiting loop and the FairMutex (issue 7, items 3, 4, 8, 9, 12, 13): on
 * real redis-servers, for every client library. Each test names the item it covers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis as IORedis } from 'ioredis';
import { createClient as createClientV5 } from 'redis';
import { createClient as createClientV4 } from 'redis4';
import { type LockEvent, subscribeLockEvents } from '../../src/events.js';
import {
  FairMutex,
  type Lease,
  Mutex,
  ReadWriteLock,
  type RedisClient,
  RedisUnavailableError,
  RedlockMutex,
  ReentrantMutex,
  Semaphore,
} from '../../src/index.js';

/** What the quiet-waiter test uses of a queued lock. */
interface QueuedLock {
  readonly name: string;
  readonly keys: { readonly queue: string; readonly line: string };
  acquire(options?: { timeoutMs?: number }): Promise<Lease>;
}

import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';
import { keepBusy, noSubscribeUrl } from '../fixtures/busy-lock.js';
import { type ClientKind, clientKinds, type TestClient } from '../fixtures/clients.js';
import { awaitedLater, redisForSuite, until, within } from '../fixtures/helpers.js';
import { lockKeyIsFree } from '../fixtures/lock-value.js';

/** ioredis that gives up on a command whose connection dropped, instead of re-sending it. */
const ioredisNoResend: ClientKind = {
  name: 'ioredis (maxRetriesPerRequest 0)',
  async create(url) {
    const client = new IORedis(url, { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    await new Promise<void>((resolve) => client.once('ready', () => resolve()));
    return {
      client,
      command: (name, ...args) => client.call(name as string, ...args),
      close: async () => client.disconnect(),
    };
  },
};

/** Clients that reject commands at once while disconnected (no offline queue). */
const failFastKinds: ClientKind[] = [
  {
    name: 'ioredis enableOfflineQueue: false',
    async create(url) {
      const client = new IORedis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
      client.on('error', () => {});
      await new Promise<void>((resolve) => client.once('ready', () => resolve()));
      return {
        client,
        command: (name, ...args) => client.call(name as string, ...args),
        close: async () => client.disconnect(),
      };
    },
  },
  {
    name: 'node-redis v5 disableOfflineQueue',
    async create(url) {
      const client = createClientV5({ url, disableOfflineQueue: true });
      client.on('error', () => {});
      await client.connect();
      return { client, command: (...a) => client.sendCommand(a), close: async () => client.destroy() };
    },
  },
  {
    name: 'node-redis v4 disableOfflineQueue',
    async create(url) {
      const client = createClientV4({ url, disableOfflineQueue: true });
      client.on('error', () => {});
      await client.connect();
      return {
        client,
        command: (...a) => client.sendCommand(a),
        close: async () => void (await client.disconnect().catch(() => {})),
      };
    },
  },
];

function collectEvents(): { events: LockEvent[]; stop: () => void } {
  const events: LockEvent[] = [];
  const stop = subscribeLockEvents((event) => events.push(event));
  return { events, stop };
}

let n = 0;
const freshName = (tag: string) => {
  n += 1;
  return `trust-d-${tag}-${n}`;
};

/** Swallows the replies of the next `count` commands running a script ending in `-acquire`. */
function swallowAcquires(proxy: FaultProxy, count: number): void {
  let left = count;
  proxy.rule = (command) => {
    if (left > 0 && command.script?.endsWith('-acquire')) {
      left -= 1;
      return 'swallow-reply';
    }
    return 'forward';
  };
}

for (const kind of [ioredisNoResend, ...clientKinds]) {
  describe(`lost replies and waiting (${kind.name})`, () => {
    let server: RedisServer;
    let proxy: FaultProxy;
    let direct: TestClient;
    let proxied: TestClient;

    before(async () => {
      server = await startRedis();
      proxy = await FaultProxy.start({ port: server.port });
      direct = await kind.create(server.url);
      proxied = await kind.create(proxy.url);
      // Load every script into the server's cache first: a swallowed reply must be the script's own,
      // not the NOSCRIPT that precedes its first run.
      const warm = freshName('warm-up');
      for (const Lock of [Mutex, FairMutex]) {
        const lock = new Lock(direct.client, warm);
        await (await lock.acquire()).release();
        await (await lock.tryAcquire())?.release();
        await lock.inspect();
      }
    });

    after(async () => {
      await proxied.close();
      await direct.close();
      await proxy.close();
      await server.stop();
    });

    // Item 3: a caller told "not acquired" must not leave its own token holding the lock.
    for (const [what, Kind, once] of [
      ['Mutex.acquire({ retries: 0 })', Mutex, false],
      ['Mutex.tryAcquire()', Mutex, true],
      ['FairMutex.acquire({ retries: 0 })', FairMutex, false],
      ['FairMutex.tryAcquire()', FairMutex, true],
    ] as const) {
      test(`item 3: ${what} whose reply was lost gives its token back when it says no`, async () => {
        const name = freshName('lost-reply');
        const lockKey = `locksmith:{${name}}`;
        const recorded = collectEvents();
        swallowAcquires(proxy, 1);
        try {
          const lock = new Kind(proxied.client, name, { ttlMs: 30_000 });
          const lease = await (once ? lock.tryAcquire() : lock.acquire({ retries: 0 })).catch(() => null);
          if (lease) {
            // The client re-sent the attempt and got its own token back: a valid lease, not a leak.
            assert.equal((await lock.inspect()).ownerToken, lease.token);
            await lease.release();
            return;
          }
          await until(async () => lockKeyIsFree(direct, lockKey), 'the key is given back');
          await until(
            async () => recorded.events.some((e) => e.type === 'give-back' && e.lockName === name),
            'a give-back event',
          );
        } finally {
          recorded.stop();
          proxy.rule = undefined;
        }
      });
    }

    // Item 9: a queue entry whose reply was lost must not swallow the one hand-off.
    test('item 9: a waiter that gave up after a lost reply does not swallow the release wake-up', async () => {
      const name = freshName('stale-sleeper');
      const holder = await new Mutex(direct.client, name, { ttlMs: 30_000 }).acquire();
      const queue = `locksmith:{${name}}:queue`;
      const viaProxy = new Mutex(proxied.client, name, { ttlMs: 30_000 });
      const waitingViaProxy = viaProxy.acquire({ timeoutMs: 20_000 });
      await until(async () => Number(await direct.command('LLEN', queue)) === 1, 'C waits');
      // Its own waiter in Redis, not queued behind the holder in this process (maxLocalHolds: 1).
      const waitingDirect = new Mutex(direct.client, name, { ttlMs: 30_000, maxLocalHolds: 1 }).acquire({
        timeoutMs: 20_000,
      });
      await until(async () => Number(await direct.command('LLEN', queue)) === 2, 'B waits');
      // A1: queued behind them, but its reply is lost and it gives up.
      swallowAcquires(proxy, 1);
      await assert.rejects(viaProxy.acquire({ retries: 0, timeoutMs: 3_000 }));
      proxy.rule = undefined;
      await until(
        async () => Number(await direct.command('LLEN', queue)) === 2,
        'the stale entry is cleaned up',
      );
      await holder.release();
      const tagged = [waitingViaProxy, waitingDirect].map((p, i) => p.then((lease) => ({ lease, i })));
      const first = await within(Promise.race(tagged), 5_000, 'a sleeper wakes');
      await first.lease.release();
      const second = await within(
        tagged[1 - first.i] as (typeof tagged)[0],
        5_000,
        'the other sleeper wakes',
      );
      await second.lease.release();
    });
  });
}

for (const kind of clientKinds) {
  describe(`waiting loop (${kind.name})`, () => {
    const redis = redisForSuite(kind, { unhandledRejections: false });

    test('item 9: the retry that follows subscribing does not use up retries (Mutex)', async () => {
      const name = freshName('retries');
      const holder = await new Mutex(redis.a.client, name, { ttlMs: 30_000 }).acquire();
      const waiter = new Mutex(redis.b.client, name).acquire({ retries: 1, timeoutMs: 10_000 });
      const outcome = waiter.then(
        () => 'acquired',
        (e: unknown) => e,
      );
      await until(
        async () => Number(await redis.a.command('LLEN', `locksmith:{${name}}:queue`)) === 1,
        'the waiter is queued',
      );
      await new Promise((r) => setTimeout(r, 100));
      await holder.release();
      assert.equal(await within(outcome, 5_000, 'the waiter'), 'acquired');
      await (await waiter).release();
    });

    // Issue 20 item 3: a queued waiter that does not listen was handed the lock silently and let it
    // sit idle until its timed wait ended, and every waiter behind it waited as long.
    test('a waiter that does not listen (wakeOnRelease: false) holds up neither the lock nor those behind it', async () => {
      const kinds: [string, (client: RedisClient, name: string, options?: object) => QueuedLock][] = [
        ['FairMutex', (c, n, o) => new FairMutex(c, n, o)],
        ['Semaphore', (c, n, o) => new Semaphore(c, n, { ...o, limit: 1 })],
        ['ReadWriteLock.writeLock', (c, n, o) => new ReadWriteLock(c, n, o).writeLock()],
        [
          'RedlockMutex',
          (c, n, o) => new RedlockMutex([c], n, { retryDelayMs: Infinity, waiterTtlMs: 30_000, ...o }),
        ],
      ];
      for (const [label, make] of kinds) {
        const name = freshName(`quiet-${label}`);
        const holder = await make(redis.a.client, name, { ttlMs: 20_000 }).acquire();
        const { keys } = make(redis.a.client, name);
        const queued = (count: number) =>
          until(
            async () =>
              Number(
                await (label === 'RedlockMutex'
                  ? redis.a.command('ZCARD', keys.line)
                  : redis.a.command('LLEN', keys.queue)),
              ) === count,
            `${count} waiter(s) queued (${label})`,
          );
        // Each gives the lock back as soon as it has it: served in either order (a RedlockMutex's
        // line orders two waiters that join in the same millisecond by token), each must be.
        const served = (options: object) =>
          awaitedLater(
            make(redis.b.client, name, { ttlMs: 20_000, ...options })
              .acquire({ timeoutMs: 15_000 })
              .then((lease) => lease.release()),
          );
        const quiet = served({ wakeOnRelease: false });
        await queued(1);
        const listening = served({});
        await queued(2);
        await holder.release();
        // Without the fix, whichever is handed the lock second (or first, if it is the quiet one) is
        // served only when the quiet waiter's timed wait ends (its 15 s timeout).
        await within(
          Promise.all([quiet, listening]),
          10_000,
          `the quiet waiter and the listening one, after the release (${label})`,
        );
      }
    });

    test('item 9: FairMutex queue renewals are not attempts', async () => {
      const name = freshName('fair-renewals');
      const mutex = new FairMutex(redis.a.client, name, { ttlMs: 30_000 });
      const holder = await mutex.acquire();
      // Renews its place every 50 ms.
      const waiter = new FairMutex(redis.b.client, name, { waiterTtlMs: 150 }).acquire({
        retries: 1,
        timeoutMs: 10_000,
      });
      const outcome = waiter.then(
        () => 'acquired',
        (e: unknown) => e,
      );
      await until(async () => (await mutex.inspect()).queueLength === 1, 'the waiter is queued');
      await new Promise((r) => setTimeout(r, 400));
      await holder.release();
      assert.equal(await within(outcome, 5_000, 'the waiter'), 'acquired');
      await (await waiter).release();
    });

    for (const via of ['acquire', 'using'] as const) {
      test(`item 9: FairMutex ${via}({ timeoutMs: 300 }) rejects on time when Redis stops answering`, async () => {
        const name = freshName('fair-late');
        const mutex = new FairMutex(redis.a.client, name, { ttlMs: 30_000 });
        const holder = await mutex.acquire();
        // An attempt sent before the deadline is waited for up to replyTimeoutMs (issue 34 item 9):
        // the call ends by timeoutMs + replyTimeoutMs.
        const waiting = new FairMutex(redis.b.client, name, { replyTimeoutMs: 300 });
        const started = performance.now();
        const pending =
          via === 'acquire'
            ? waiting.acquire({ timeoutMs: 300 })
            : waiting.using(async () => 'ran', { timeoutMs: 300 });
        const outcome = pending.then(
          () => 'resolved',
          () => performance.now() - started,
        );
        await until(async () => (await mutex.inspect()).queueLength === 1, 'the waiter is queued');
        redis.server.pause();
        try {
          const elapsed = await within(outcome, 5_000, 'the rejection');
          assert.equal(typeof elapsed, 'number', 'rejected');
          // Before the fix it rejected up to 1 s late (its leaving the queue waited on the paused
          // server); now it waits ≤ 50 ms for that, after timeoutMs + replyTimeoutMs. The margin is
          // for a loaded machine's event loop.
          assert.ok(
            (elapsed as number) < 300 + 300 + 600,
            `rejected after ${Math.round(elapsed as number)} ms`,
          );
        } finally {
          redis.server.resume();
        }
        await until(
          async () => (await mutex.inspect()).queueLength === 0,
          'the waiter left in the background',
        );
        await holder.release();
      });
    }

    // Item 4: a hand-off heard after its validity ran out is handed on, never resolved as a lease.
    test('item 4: FairMutex never resolves a hand-off whose validity already ran out', async () => {
      const name = freshName('fair-dead-handoff');
      const clock = { offset: 0, now: () => performance.now() + clock.offset };
      const holder = await new FairMutex(redis.a.client, name, { ttlMs: 30_000 }).acquire();
      const mutex = new FairMutex(redis.b.client, name, { ttlMs: 1_000, clock });
      let ranOnDeadLease = false;
      const pending = mutex.using(
        async (_signal, lease) => {
          ranOnDeadLease = !lease.isHeld;
          return { held: lease.isHeld, remaining: lease.remainingMs, token: lease.token };
        },
        { timeoutMs: 10_000 },
      );
      await until(async () => (await mutex.inspect()).queueLength === 1, 'the waiter is queued');
      await new Promise((r) => setTimeout(r, 100)); // subscribed
      // The hand-off message "arrives" two TTLs after the waiter's last queued request.
      clock.offset += 2_000;
      await holder.release();
      const seen = await within(pending, 5_000, 'the waiter');
      assert.equal(ranOnDeadLease, false, 'work ran on a lease with no validity left');
      assert.equal(seen.held, true);
      assert.ok(seen.remaining > 500, `remaining ${seen.remaining} ms`);
    });

    // Item 12: a single attempt is bounded by the TTL, whatever the client does while offline.
    test('item 12: tryAcquire() against a stopped server rejects within about ttlMs', async () => {
      const own = await startRedis();
      const client = await kind.create(own.url);
      try {
        const mutex = new Mutex(client.client, freshName('stopped'), { ttlMs: 1_000 });
        const fair = new FairMutex(client.client, freshName('stopped-fair'), { ttlMs: 1_000 });
        await own.kill();
        for (const lock of [mutex, fair]) {
          const started = performance.now();
          const error = await within(
            lock.tryAcquire().then(
              () => undefined,
              (e: unknown) => e,
            ),
            6_000,
            'tryAcquire',
          );
          assert.ok(error instanceof RedisUnavailableError, `got ${String(error)}`);
          assert.ok(performance.now() - started < 2_500, `took ${performance.now() - started} ms`);
        }
      } finally {
        await client.close();
        await own.stop();
      }
    });

    // Item 8: SUBSCRIBE is refused: waiters poll with a short back-off, never the holder's whole TTL.
    test('item 8: waiters poll (briefly) when subscribing fails', async () => {
      const own = await startRedis({ args: ['--rename-command', 'SUBSCRIBE', '""'] });
      const holderClient = await kind.create(own.url);
      const waiterClient = await kind.create(own.url);
      const recorded = collectEvents();
      try {
        for (const Lock of [Mutex, FairMutex]) {
          const name = freshName(`no-subscribe-${Lock.name}`);
          const holder = await new Lock(holderClient.client, name, { ttlMs: 30_000 }).acquire();
          const waiter = new Lock(waiterClient.client, name, { ttlMs: 30_000 }).acquire({
            timeoutMs: 20_000,
          });
          await until(
            async () => recorded.events.some((e) => e.type === 'polling' && e.lockName === name),
            'the waiter polls',
          );
          assert.ok(recorded.events.some((e) => e.type === 'subscribe-failed' && e.lockName === name));
          await new Promise((r) => setTimeout(r, 300));
          const released = performance.now();
          await holder.release();
          const lease = await within(waiter, 5_000, `${Lock.name} waiter`);
          assert.ok(performance.now() - released < 1_000, `woke ${performance.now() - released} ms after`);
          await lease.release();
        }
      } finally {
        recorded.stop();
        await holderClient.close();
        await waiterClient.close();
        await own.stop();
      }
    });

    // Item 8: the polls of a waiter queued without a channel are renewals, not retries (a 50 ms cap
    // on its wait bound made each of them count, and `retries: 2` gave up within ~150 ms).
    test('item 8: a waiter that cannot subscribe polls without using up its retries', async () => {
      const own = await startRedis();
      const holderClient = await kind.create(own.url);
      const pollerClient = await kind.create(await noSubscribeUrl(own));
      const recorded = collectEvents();
      try {
        for (const Lock of [Mutex, FairMutex]) {
          const name = freshName(`poller-retries-${Lock.name}`);
          const holder = await new Lock(holderClient.client, name, { ttlMs: 10_000 }).acquire();
          const poller = new Lock(pollerClient.client, name, { ttlMs: 10_000 });
          const polls = () =>
            recorded.events.filter((e) => e.type === 'polling' && e.lockName === name).length;
          // A first call learns that subscribing fails; the next is queued without a channel. The
          // first ends once it has learnt it, not after a fixed time: on a loaded machine its first
          // reply came after a 100 ms timeout, it never subscribed, and the second call's polling
          // event (the second of the name) was waited for until that call timed out.
          const learning = new AbortController();
          const first = poller.acquire({ signal: learning.signal }).catch(() => undefined);
          await until(
            async () => recorded.events.some((e) => e.type === 'subscribe-failed' && e.lockName === name),
            'the first call fails to subscribe',
          );
          learning.abort();
          await first;
          const pollsBefore = polls();
          // Handled at once: a rejection while the test waits below must fail it as this call's own.
          const waiting = awaitedLater(poller.acquire({ retries: 2, timeoutMs: 8_000 }));
          await until(async () => polls() > pollsBefore, 'the second call polls');
          await new Promise((r) => setTimeout(r, 500));
          await holder.release();
          const lease = await within(waiting, 5_000, `${Lock.name} poller`);
          await lease.release();
        }
      } finally {
        recorded.stop();
        await holderClient.close();
        await pollerClient.close();
        await own.stop();
      }
    });

    // Item 8 under contention: a waiter that cannot subscribe is still served. Its hand-offs reach
    // no subscriber, and a Mutex (and a ReentrantMutex) skipped such a waiter (as if its process were gone), while the
    // waiters that can subscribe kept the lock busy: it never found the lock free and timed out.
    test('item 8: a waiter that cannot subscribe gets the lock while waiters that can keep it busy', async () => {
      const own = await startRedis();
      const busyClients = await Promise.all([0, 1, 2].map(() => kind.create(own.url)));
      const pollerClient = await kind.create(await noSubscribeUrl(own));
      const recorded = collectEvents();
      try {
        // A Semaphore of one permit too: since issue #20 item 3 its waiters that cannot subscribe
        // are queued the same way (no channel, short places, 50 ms renewals).
        const OnePermit = class OnePermitSemaphore extends Semaphore {
          constructor(client: RedisClient, name: string, options?: object) {
            super(client, name, { ...options, limit: 1 });
          }
        };
        for (const Lock of [Mutex, FairMutex, ReentrantMutex, OnePermit]) {
          const name = freshName(`poller-under-contention-${Lock.name}`);
          // The lock is busy, handed from one subscribed waiter to the next.
          // The Mutex hands over at every release here (handOffAfterMs 0): barging, it leaves the lock
          // free between a release and its releaser's next acquire, and the poller takes it then,
          // never having to wait (what this test is about).
          const options = Lock === Mutex ? { ttlMs: 10_000, handOffAfterMs: 0 } : { ttlMs: 10_000 };
          const busy = await keepBusy(busyClients.map((c) => new Lock(c.client, name, options)));
          try {
            const poller = new Lock(pollerClient.client, name, options);
            const lease = await poller.acquire({ timeoutMs: 8_000 });
            const before = busy.acquisitions();
            try {
              assert.ok(
                recorded.events.some((e) => e.type === 'subscribe-failed' && e.lockName === name),
                'the poller could not subscribe',
              );
            } finally {
              // Released whatever the assertion says: held on, it would time the busy clients out,
              // and their timeout would hide the assertion.
              await lease.release();
            }
            await until(async () => busy.acquisitions() > before, 'the busy clients go on after it');
          } finally {
            await busy.stop();
          }
        }
      } finally {
        recorded.stop();
        for (const c of [...busyClients, pollerClient]) await c.close();
        await own.stop();
      }
    });
  });
}

for (const kind of failFastKinds) {
  describe(`Redis unreachable (${kind.name})`, () => {
    // Items 12 and 13: a transient error on the last allowed attempt is an infrastructure error.
    test('items 12/13: acquire({ retries: 0 }) against an errored attempt is RedisUnavailableError with cause', async () => {
      const own = await startRedis();
      const client = await kind.create(own.url);
      try {
        await own.kill();
        await new Promise((r) => setTimeout(r, 100));
        for (const lock of [
          new Mutex(client.client, freshName('down'), { ttlMs: 1_000 }),
          new FairMutex(client.client, freshName('down-fair'), { ttlMs: 1_000 }),
        ]) {
          const error = await within(
            lock.acquire({ retries: 0 }).then(
              () => undefined,
              (e: unknown) => e,
            ),
            6_000,
            'acquire',
          );
          assert.ok(error instanceof RedisUnavailableError, `got ${String(error)}`);
          assert.ok(error.cause instanceof Error, 'the client error is the cause');
        }
      } finally {
        await client.close();
        await own.stop();
      }
    });

    test('item 12: acquire({ timeoutMs: Infinity }) gives up once Redis was unreachable for a TTL', async () => {
      const own = await startRedis();
      const client = await kind.create(own.url);
      const recorded = collectEvents();
      try {
        await own.kill();
        const started = performance.now();
        const error = await within(
          new Mutex(client.client, freshName('down-forever'), { ttlMs: 500 })
            .acquire({ timeoutMs: Infinity })
            .then(
              () => undefined,
              (e: unknown) => e,
            ),
          6_000,
          'acquire',
        );
        assert.ok(error instanceof RedisUnavailableError, `got ${String(error)}`);
        assert.ok(performance.now() - started < 3_000);
        assert.ok(recorded.events.some((e) => e.type === 'attempt-failed'));
      } finally {
        recorded.stop();
        await client.close();
        await own.stop();
      }
    });
  });
}
