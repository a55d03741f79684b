/**
 * A primary of a real Redis Cluster killed (SIGKILL, by PID) while locks are held and callers wait,
 * on every cluster client. Unlike `CLUSTER FAILOVER` (cluster.test.ts), nothing is coordinated: the
 * other primaries mark the node failed once it has not answered for `cluster-node-timeout` (2 s in
 * the fixture), and its replica wins an election and takes its slots; writes the replica had not
 * applied are gone. Replication is held back on purpose for one lock (its replica's clients are
 * paused, so the grant and the fencing counter written just before the kill never reach it).
 *
 * What must hold: a caller in the window gets Locksmith's own `RedisUnavailableError`, with the
 * client's error as `cause` (never a MOVED, ASK, CROSSSLOT or NOSCRIPT refusal: `RedisCommandError`);
 * a holder whose lock the promoted replica never had learns it from its lease's `signal`; held locks
 * the replica had are still held, and their waiters get them; fencing tokens keep rising, also for
 * the lock whose counter the replica had not seen (their floor is the server's clock).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  FairMutex,
  type Lease,
  LockLostError,
  Mutex,
  RedisCommandError,
  RedisUnavailableError,
  Semaphore,
} from '../../src/index.js';
import type { RedisServer } from '../../tools/redis-server.js';
import { clusterClientKinds, type TestClient } from '../fixtures/clients.js';
import { abortedWith, awaitedLater, clusterForSuite, nameMaker, until, within } from '../fixtures/helpers.js';
import { type RedisCluster, startCluster } from '../fixtures/redis-cluster.js';

let cluster: RedisCluster;
before(async () => {
  cluster = await startCluster();
});
after(async () => {
  await cluster?.stop();
});

/**
 * The cluster clients that do not notice a killed primary by themselves: node-redis 4 and 5 look up
 * the cluster's slots again only when a node answers MOVED, and keep a command for the dead node
 * queued while they reconnect to it, so its slots wait until the node is back (a replica now, which
 * answers MOVED). For them the killed node is restarted as soon as its replica is promoted; the
 * others must get through the failover without it.
 */
const needsTheNodeBack = new Set(['node-redis v5 createCluster()', 'node-redis v4 createCluster()']);

const TTL_MS = 15_000;

/** The lock kinds whose scripts differ (hand-off with and without barging, a semaphore). */
const lockKinds = [
  { name: 'Mutex', create: (c: TestClient, n: string) => new Mutex(c.client, n, { ttlMs: TTL_MS }) },
  { name: 'FairMutex', create: (c: TestClient, n: string) => new FairMutex(c.client, n, { ttlMs: TTL_MS }) },
  {
    name: 'Semaphore',
    create: (c: TestClient, n: string) => new Semaphore(c.client, n, { ttlMs: TTL_MS, limit: 1 }),
  },
];

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function infoNumber(info: string, field: string): number {
  return Number(info.match(new RegExp(`^${field}:(\\d+)`, 'm'))?.[1]);
}

/** Until `replica` has applied every write `primary` had made when asked. */
async function caughtUp(primary: RedisServer, replica: RedisServer): Promise<void> {
  const offset = infoNumber(await primary.command('INFO', 'replication'), 'master_repl_offset');
  await until(
    async () => infoNumber(await replica.command('INFO', 'replication'), 'slave_repl_offset') >= offset,
    'the replica has every write so far',
  );
}

/** A key's string value on one node (a raw reply: `$<n>\r\n<value>`, or `$-1` for none). */
async function valueOn(node: RedisServer, key: string): Promise<string | undefined> {
  return (await node.command('GET', key)).split('\r\n')[1];
}

/** What a call in the window ended with: its rejection, and how long it took. */
async function rejectionOf(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await call().then(
    (value) => assert.fail(`resolved with ${String(value)} while the lock's primary was down`),
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - started };
}

/** Locksmith's error for Redis unreachable, with the client's error as cause; not a refusal. */
function assertUnavailable(error: unknown, what: string): void {
  assert.ok(!(error instanceof RedisCommandError), `${what}: refused as a command error: ${String(error)}`);
  assert.ok(error instanceof RedisUnavailableError, `${what}: ${String(error)}`);
  assert.ok(error.cause instanceof Error, `${what}: a cause says why (${String(error.cause)})`);
  // The client's account (ioredis: "Too many Cluster redirections. Last error: ..."), not a
  // redirection or script reply handed through as the reason.
  assert.doesNotMatch(error.cause.message, /^(MOVED|ASK|CROSSSLOT|NOSCRIPT)\b/, `${what}: its cause`);
}

for (const kind of clusterClientKinds) {
  describe(`a primary killed while locks are held and callers wait (${kind.name})`, () => {
    const clients = clusterForSuite(kind, () => cluster);
    const name = nameMaker(`killed-${kind.name}`);

    test('the cluster promotes its replica: typed errors in the window, lost grants signalled, waiters served, tokens rise', async (t) => {
      const { a, b } = clients;
      // Every lock in one slot (a name's hash tag ends at its first `}`): one kill hits them all.
      const slot = name();
      const locks = lockKinds.map((lockKind) => ({
        held: lockKind.create(a, `${slot}}${lockKind.name}`),
        other: () => lockKind.create(b, `${slot}}${lockKind.name}`),
      }));
      const leases = await Promise.all(locks.map(({ held }) => held.acquire()));
      // A waiter's sharded subscription may not follow its shard (cluster.test.ts says which
      // clients re-subscribe), so it also asks again every second.
      const waiting = locks.map(({ other }) =>
        awaitedLater(other().acquire({ timeoutMs: 60_000, retryDelayMs: 1_000 })),
      );
      for (const { held } of locks) {
        await until(
          async () => Number(await b.command('EXISTS', held.keys.queue)) === 1,
          'the waiter is queued',
        );
      }
      // A lock whose earlier holder's token the replica has, and whose next grant it will not have.
      const unreplicated = new Mutex(a.client, `${slot}}unreplicated`, { ttlMs: TTL_MS });
      const earlier = await unreplicated.acquire();
      assert.equal(await earlier.release(), true);
      const primary = await cluster.primaryFor(locks[0]?.held.keys.lock as string);
      const replica = await cluster.replicaOf(primary);
      await caughtUp(primary, replica);

      // The replica applies nothing more (its clients are paused, its primary's stream with them):
      // this grant and its fencing counter live on the primary only, and die with it.
      await replica.command('CLIENT', 'PAUSE', '2000', 'ALL');
      const orphan = await unreplicated.acquire();
      const orphanLost = abortedWith(orphan.signal);
      assert.equal(await valueOn(primary, unreplicated.keys.fence), String(orphan.fencingToken));

      const killing = cluster.killPrimary(primary);
      await until(() => !alive(primary.pid), 'the primary is gone');
      let restarted = false;
      try {
        // Callers while the slot has no primary: an extension and a try, each bounded by
        // replyTimeoutMs (2 s), end in Locksmith's RedisUnavailableError with the client's cause.
        const during = await Promise.all([
          rejectionOf(() => (leases[0] as Lease).extend()),
          rejectionOf(() => new FairMutex(b.client, `${slot}}FairMutex`).tryAcquire()),
        ]);
        for (const [i, { error, ms }] of during.entries()) {
          const what = ['extend()', 'tryAcquire()'][i] as string;
          assertUnavailable(error, what);
          assert.ok(ms < 5_000, `${what} answered within replyTimeoutMs, not after ${Math.round(ms)} ms`);
          t.diagnostic(`${what} in the window: ${String(error)} (cause: ${String((error as Error).cause)})`);
        }
        const killed = await killing;
        t.diagnostic(
          `replica promoted ${Math.round(killed.promotedAfterMs)} ms after the kill, cluster settled after ${Math.round(killed.settledAfterMs)} ms`,
        );
        assert.equal(killed.promoted, replica);

        // The promoted replica never had the last grant's counter: it is still the earlier holder's.
        assert.equal(
          await valueOn(replica, unreplicated.keys.fence),
          String(earlier.fencingToken),
          'the counter on the promoted replica is behind the token granted before the kill',
        );

        if (needsTheNodeBack.has(kind.name)) {
          await cluster.restart(primary);
          restarted = true;
        }

        // The holder of the grant the replica never had: its watchdog's next extension finds no
        // token on the new primary, and the lease's signal says so.
        const reason = await within(orphanLost, 3 * TTL_MS, "the orphaned lease's signal");
        assert.ok(reason instanceof LockLostError, `the signal says why: ${String(reason)}`);
        assert.equal(reason.reason, 'not-owner');
        assert.equal(await orphan.release(), false);

        // Its next holder is above it although the counter was behind: the token's clock floor.
        const nextOfOrphan = await new Mutex(b.client, unreplicated.name).acquire({ timeoutMs: 10_000 });
        assert.ok(
          nextOfOrphan.fencingToken > orphan.fencingToken,
          `tokens rise across the lost counter: ${orphan.fencingToken} then ${nextOfOrphan.fencingToken}`,
        );
        assert.equal(await nextOfOrphan.release(), true);

        // The locks the replica had: still held, then handed to their waiters, tokens rising.
        for (const [i, { held }] of locks.entries()) {
          const lease = leases[i] as Lease;
          await lease.extend();
          assert.ok(lease.isHeld && !lease.signal.aborted, `${held.name} is still held by its holder`);
          assert.equal(await lease.release(), true);
          const next = await within(waiting[i] as Promise<Lease>, 30_000, `the waiter of ${held.name}`);
          assert.ok(next.fencingToken > lease.fencingToken, 'fencing tokens grow across the failover');
          assert.equal(await next.release(), true);
          const later = await held.acquire();
          assert.ok(later.fencingToken > next.fencingToken);
          assert.equal(await later.release(), true);
        }
      } finally {
        await killing.catch(() => {});
        if (!restarted) await cluster.restart(primary);
      }
      assert.equal((await cluster.primaries()).length, 3, 'the killed node is back, as a replica');
    });
  });
}
