/**
 * RedlockMutex on real redis-servers (3 and 5 independent masters), for every client kind:
 * acquisition succeeds exactly when a quorum of nodes is free, whatever subset is held by someone
 * else or down; a failed attempt leaves no key of its own on any node; a lease survives the loss of
 * a minority and is lost (signal aborted) with a majority; a node slower than the per-node timeout
 * does not hold a call up; fencing tokens grow under contention; waiters are served in the order
 * of their places, the same on every node; a waiter holding a minority gives it back.
 *
 * Servers are started once per file and shared by every mask (each mask uses a fresh lock name). A
 * node that is "down" is a client connected through a fault proxy that black-holes every byte (its
 * requests are never answered, as with a paused or unreachable server).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Clock } from '../../src/clock.js';
import { type Lease, LockLostError, QuorumError, type RedisClient, RedlockMutex } from '../../src/index.js';
import { lockKeys } from '../../src/protocol/keys.js';
import { PLACE_TOLERANCE_MS } from '../../src/protocol/redlock.js';
import { scripts } from '../../src/protocol/scripts.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';
import { keepBusy, noSubscribeUrl } from '../fixtures/busy-lock.js';
import { type ClientKind, clientKinds, ioredisKind, type TestClient } from '../fixtures/clients.js';
import {
  abortedWith,
  nameMaker,
  sleep,
  until,
  watchUnhandledRejections,
  within,
} from '../fixtures/helpers.js';
import {
  attemptAfterRelease,
  interceptScripts,
  lateGiveBack,
  lateNoScript,
  releaseRanSince,
  tombstoneKeptMs,
  tombstoneKeptMsOnceReleased,
} from '../fixtures/late-give-back.js';
import { ownerTokenOf } from '../fixtures/lock-value.js';

const PREFIX = 'locksmith';
const SERVERS = 5;
const OTHER_OWNER = 'someone-else';
/** Masks checked at once; each waits out its down nodes' 600 ms timeouts. */
const MASKS_AT_ONCE = 8;

/** Every way `nodes` nodes can each be free, held by someone else, or down (3^nodes). */
function masks(nodes: number, states: readonly NodeState[]): NodeState[][] {
  let all: NodeState[][] = [[]];
  for (let i = 0; i < nodes; i += 1) all = all.flatMap((m) => states.map((s) => [...m, s]));
  return all;
}
type NodeState = 'free' | 'held' | 'down';

/** The owner token stored on one server for a lock (undefined: no key). */
async function ownerOn(client: TestClient, name: string): Promise<string | undefined> {
  // No key, or the release a release leaves there (an empty owner): nobody holds it.
  const owner = ownerTokenOf(await client.command('GET', lockKeys(PREFIX, name).lock));
  return owner === '' ? undefined : owner;
}

/**
 * Waits until `lease` holds `name` on every node. An acquisition counts once a quorum granted it,
 * and the other nodes' grants may land later (a reply slower than the rest): a waiter started
 * before then may take such a node's free lock, hold a minority and step to the back of the line,
 * so a test that reads the lines or the order of hand-offs starts its waiters after this.
 */
async function heldOnEveryNode(clients: readonly TestClient[], name: string, lease: Lease): Promise<void> {
  await until(
    async () => (await Promise.all(clients.map((c) => ownerOn(c, name)))).every((o) => o === lease.token),
    'the holder holds every node',
  );
}

describe('RedlockMutex', () => {
  const servers: RedisServer[] = [];
  before(async () => {
    for (let i = 0; i < SERVERS; i += 1) servers.push(await startRedis());
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  for (const kind of clientKinds) redlockSuite(kind, servers);

  test('a grant given back as unusable is not deleted later by that give-back re-sent after the next attempt', async () => {
    // As the RedlockSemaphore's test of the same name: the first grant comes too late to use (a
    // clock skips 2 s forward), its give-back fails on server 1 and is re-sent there in the
    // background, after the call's next attempt took servers 0 and 1 (server 2 is someone else's).
    // The re-sent release must not delete server 1's grant under the lease.
    const lockName = `redlock-late-give-back-${process.pid}`;
    const direct = await Promise.all(servers.slice(0, 3).map((s) => ioredisKind.create(s.url)));
    const gated = await ioredisKind.create((servers[1] as RedisServer).url);
    try {
      await direct[2]?.command('SET', lockKeys(PREFIX, lockName).lock, OTHER_OWNER, 'PX', '60000');
      // Every script is loaded already, so each call below is one EVALSHA (no NOSCRIPT fallback).
      for (const script of Object.values(scripts)) await direct[1]?.command('SCRIPT', 'LOAD', script.source);
      let skewMs = 0;
      const clock: Clock = { now: () => performance.now() + skewMs };
      const server1 = lateGiveBack(
        gated.client,
        { acquire: scripts.redlockAcquire, release: scripts.redlockRelease },
        () => {
          skewMs += 2_000;
        },
      );
      const clients = [direct[0], gated, direct[2]].map((c) => (c as TestClient).client);
      const lock = new RedlockMutex(clients, lockName, {
        ttlMs: 1_000,
        autoExtend: false,
        wakeOnRelease: false,
        retryJitterMs: 0,
        clock,
      });
      const lease = await lock.acquire({ timeoutMs: 5_000 });
      assert.ok(
        server1.acquires() >= 2,
        `the first grant was given back, then attempted again (${server1.calls})`,
      );
      // Longer than the re-send's first back-off (5 ms): a re-sent release has been applied by now.
      await sleep(100);
      assert.ok(lease.isHeld, 'the lease counts itself valid');
      const owners = await Promise.all(direct.map((c) => ownerOn(c, lockName)));
      const holding = owners.filter((owner) => owner === lease.token).length;
      assert.ok(
        holding >= 2,
        `a quorum holds the valid lease's token (owners: ${JSON.stringify(owners.map((o) => (o === lease.token ? 'lease' : o)))}; server 1's calls: ${server1.calls})`,
      );
      await lease.release();
    } finally {
      await direct[2]?.command('DEL', lockKeys(PREFIX, lockName).lock);
      await Promise.all([...direct, gated].map((c) => c.close()));
    }
  });

  test("an attempt answered NOSCRIPT after the same token's release went out is not sent again as EVAL", async () => {
    // As the RedlockSemaphore's test of the same name: server 2 has the release script but not the
    // acquire script, and the attempt's NOSCRIPT answer comes back late. The lease holds on servers
    // 0 and 1 and is released; the release reaches server 2 first (after its bounded wait for the
    // attempt) and finds nothing. The attempt's EVAL, sent after it, took the lock there for nobody.
    const lockName = `redlock-noscript-after-release-${process.pid}`;
    const direct = await Promise.all(servers.slice(0, 3).map((s) => ioredisKind.create(s.url)));
    const gated = await ioredisKind.create((servers[2] as RedisServer).url);
    try {
      await direct[2]?.command('SCRIPT', 'FLUSH');
      for (const script of Object.values(scripts)) {
        if (script !== scripts.redlockAcquire) await direct[2]?.command('SCRIPT', 'LOAD', script.source);
      }
      const redlockScripts = { acquire: scripts.redlockAcquire, release: scripts.redlockRelease };
      const server2 = lateNoScript(gated.client, redlockScripts, 800);
      const clients = [direct[0], direct[1], gated].map((c) => (c as TestClient).client);
      // The release waits for the attempt at most a third of the TTL (500 ms), before its answer.
      const lock = new RedlockMutex(clients, lockName, { ttlMs: 1_500, autoExtend: false });
      const lease = await lock.acquire({ timeoutMs: 1_000 });
      assert.equal(await lease.release(), true);
      await server2.answered();
      await sleep(200);
      assert.equal(
        await ownerOn(direct[2] as TestClient, lockName),
        undefined,
        `nobody holds server 2 (server 2's calls: ${server2.calls})`,
      );
    } finally {
      await Promise.all([...direct, gated].map((c) => c.close()));
    }
  });

  test("an attempt that reaches a server after the same token's release takes no lock there", async () => {
    // As the RedlockSemaphore's test of the same name (issue 39, cause 2: ioredis re-sent an attempt
    // and its release on a new connection after both had run on a reset one, so the server ran the
    // release, then the attempt again). Server 2's client holds the attempt back until the release
    // was answered there: the release finds nothing, and the attempt took the free lock for nobody.
    const lockName = `redlock-attempt-after-release-${process.pid}`;
    const direct = await Promise.all(servers.slice(0, 3).map((s) => ioredisKind.create(s.url)));
    const gated = await ioredisKind.create((servers[2] as RedisServer).url);
    try {
      for (const script of Object.values(scripts)) await direct[2]?.command('SCRIPT', 'LOAD', script.source);
      const redlockScripts = { acquire: scripts.redlockAcquire, release: scripts.redlockRelease };
      const server2 = attemptAfterRelease(gated.client, redlockScripts);
      const clients = [direct[0], direct[1], gated].map((c) => (c as TestClient).client);
      const lock = new RedlockMutex(clients, lockName, {
        ttlMs: 3_000,
        nodeTimeoutMs: 200,
        autoExtend: false,
      });
      const lease = await lock.acquire({ timeoutMs: 2_000 });
      assert.equal(await lease.release(), true);
      await server2.sent();
      assert.deepEqual(server2.calls, ['acquire 1', 'release 1'], 'the attempt was held back');
      for (const [i, client] of direct.entries()) {
        assert.equal(
          await ownerOn(client, lockName),
          undefined,
          `nobody holds server ${i} (server 2's calls, sent in that order: release, then attempt)`,
        );
        // Kept a minute, not the 3 s TTL.
        const keptMs = await tombstoneKeptMs(client, PREFIX, lockName, lease.token);
        assert.ok(keptMs > 30_000, `server ${i} keeps the release's tombstone a minute (${keptMs} ms left)`);
      }
    } finally {
      await Promise.all([...direct, gated].map((c) => c.close()));
    }
  });

  test("a release keeps its tombstone the call's TTL when that is over a minute", async () => {
    // An attempt may be re-sent as late as its call's TTL: a call asking for 2 minutes leaves a
    // tombstone for 2 minutes, not the minute a release keeps it at least.
    const lockName = `redlock-long-call-${process.pid}`;
    const direct = await Promise.all(servers.slice(0, 3).map((s) => ioredisKind.create(s.url)));
    try {
      const lock = new RedlockMutex(
        direct.map((c) => c.client),
        lockName,
        { ttlMs: 3_000, autoExtend: false },
      );
      const lease = await lock.acquire({ ttlMs: 120_000 });
      assert.equal(await lease.release(), true);
      for (const [i, client] of direct.entries()) {
        const keptMs = await tombstoneKeptMsOnceReleased(client, PREFIX, lockName, lease.token);
        assert.ok(keptMs > 90_000, `server ${i} keeps it the call's 120 s (${keptMs} ms left)`);
      }
    } finally {
      await Promise.all(direct.map((c) => c.close()));
    }
  });

  test("an attempt held back behind the same token's hung call, then overtaken by its release, takes no lock", async () => {
    // Server 2 applies the call's first attempt but never answers it; the next attempt (made once
    // the waiter subscribed, before someone else's release hands the lock on) waits there behind
    // it, goes out after the lease's release was made, and reaches server 2 after it.
    const lockName = `redlock-attempt-behind-hung-${process.pid}`;
    const direct = await Promise.all(servers.slice(0, 3).map((s) => ioredisKind.create(s.url)));
    const gated = await ioredisKind.create((servers[2] as RedisServer).url);
    const watched = await ioredisKind.create((servers[0] as RedisServer).url);
    try {
      for (const script of Object.values(scripts)) await direct[2]?.command('SCRIPT', 'LOAD', script.source);
      const redlockScripts = { acquire: scripts.redlockAcquire, release: scripts.redlockRelease };
      const server2 = attemptAfterRelease(gated.client, redlockScripts, { behindHung: true });
      const server0 = interceptScripts(watched.client, redlockScripts, (_script, _count, send) => send());
      const options = { ttlMs: 3_000, nodeTimeoutMs: 200, autoExtend: false };
      const directClients = direct.map((c) => c.client);
      const other = await new RedlockMutex(directClients, lockName, options).acquire();
      const clients = [watched, direct[1], gated].map((c) => (c as TestClient).client);
      const acquiring = new RedlockMutex(clients, lockName, options).acquire({ timeoutMs: 5_000 });
      await until(() => server2.acquires() === 1, 'the first attempt reached server 2');
      // Released only once the second attempt is made (it goes out on server 0 at once): released
      // earlier, a waiter that subscribed meanwhile may take the hand-offs of servers 0 and 1 as its
      // quorum and never make a second attempt (seen on a loaded machine).
      await until(() => server0.acquires() >= 2, 'the attempt after subscribing reached server 0');
      await other.release();
      const lease = await acquiring;
      assert.equal(await lease.release(), true);
      await server2.sent();
      await sleep(200);
      // (A third attempt, the waiter's look after the hand-off window, may go out before the release.)
      const { calls } = server2;
      assert.ok(
        calls.indexOf('acquire 2') < calls.indexOf('release 1'),
        `went out before the release: ${calls}`,
      );
      for (const [i, client] of direct.entries()) {
        assert.equal(
          await ownerOn(client, lockName),
          undefined,
          `nobody holds server ${i} (server 2's calls, run in this order: release, then attempt 2)`,
        );
      }
    } finally {
      await Promise.all([...direct, gated, watched].map((c) => c.close()));
    }
  });

  test('mixed client libraries in one quorum; a waiter is handed the lock by the release, not its timer', async () => {
    const kinds = [clientKinds[0], clientKinds[3], clientKinds[5]] as ClientKind[];
    const holderClients = await Promise.all(kinds.map((k, i) => k.create((servers[i] as RedisServer).url)));
    const waiterClients = await Promise.all(
      kinds.reverse().map((k, i) => k.create((servers[i] as RedisServer).url)),
    );
    try {
      const lockName = `redlock-mixed-${process.pid}`;
      // nodeTimeoutMs 1 s, not the default 50 ms: at a load average of 15 (a CI run beside other
      // jobs) every attempt of the waiter timed out on two nodes, and it never reached a quorum.
      const holder = new RedlockMutex(
        holderClients.map((c) => c.client),
        lockName,
        { ttlMs: 20_000, nodeTimeoutMs: 1_000 },
      );
      const waiter = new RedlockMutex(
        waiterClients.map((c) => c.client),
        lockName,
        { ttlMs: 20_000, retryDelayMs: 10_000, nodeTimeoutMs: 1_000 },
      );
      const lease = await holder.acquire();
      const waiting = waiter.acquire({ timeoutMs: 15_000 });
      const keys = lockKeys(PREFIX, lockName);
      await until(async () => {
        const ready = await Promise.all(
          holderClients.map(async (c) => {
            const channels = (await c.command(
              'PUBSUB',
              'CHANNELS',
              `${keys.grantedChannelPrefix}*`,
            )) as unknown[];
            return channels.length === 1 && Number(await c.command('ZCARD', keys.line)) === 1;
          }),
        );
        return ready.every(Boolean);
      }, 'the waiter is in the line and listens on every node');
      const releasedAt = performance.now();
      assert.equal(await lease.release(), true);
      const next = await within(waiting, 5_000, 'the waiter acquires');
      const wokeAfterMs = performance.now() - releasedAt;
      assert.ok(
        wokeAfterMs < 2_000,
        `woken by the release (${Math.round(wokeAfterMs)} ms), not its 10 s timer`,
      );
      assert.ok(next.fencingToken > lease.fencingToken);
      assert.equal(await next.release(), true);
    } finally {
      await Promise.all([...holderClients, ...waiterClients].map((c) => c.close()));
    }
  });
  // Issue 20 item 7: the waiting loop took a watch on the channels already subscribed as a watch on
  // all of them, so a waiter whose process already listened on one node never subscribed on the
  // others: their hand-offs reached nobody, skipped it as gone, and it waited for its timer.
  test('a waiter listens on every node, also when its process already listens on one of them', async () => {
    const kind = clientKinds[0] as ClientKind;
    const holderClients = await Promise.all(
      [0, 1, 2].map((i) => kind.create((servers[i] as RedisServer).url)),
    );
    const waiterClients = await Promise.all(
      [0, 1, 2].map((i) => kind.create((servers[i] as RedisServer).url)),
    );
    try {
      const lockName = `redlock-partly-listening-${process.pid}`;
      const keys = lockKeys(PREFIX, lockName);
      const options = { ttlMs: 20_000, retryDelayMs: Number.POSITIVE_INFINITY, waiterTtlMs: 30_000 };
      const holder = new RedlockMutex(
        holderClients.map((c) => c.client),
        lockName,
        options,
      );
      const lease = await holder.acquire();
      // Another waiter of this process, on node 0 alone, listens on that node's channel of the client.
      const first = new RedlockMutex([(waiterClients[0] as TestClient).client], lockName, options);
      const firstWaiting = first.acquire({ timeoutMs: 15_000 });
      const lineIs = (node: number, count: number) =>
        until(
          async () => Number(await (holderClients[node] as TestClient).command('ZCARD', keys.line)) === count,
          `${count} in line on node ${node}`,
        );
      await lineIs(0, 1);
      const waiter = new RedlockMutex(
        waiterClients.map((c) => c.client),
        lockName,
        options,
      );
      const waiting = waiter.acquire({ timeoutMs: 15_000 });
      await Promise.all([lineIs(0, 2), lineIs(1, 1), lineIs(2, 1)]);
      const subscribedOn = async (node: number) => {
        const channels = (await (holderClients[node] as TestClient).command(
          'PUBSUB',
          'CHANNELS',
          `${keys.grantedChannelPrefix}*`,
        )) as unknown[];
        return channels.length === 1;
      };
      await until(
        async () => (await Promise.all([0, 1, 2].map(subscribedOn))).every(Boolean),
        'the waiter listens on every node',
      );
      assert.equal(await lease.release(), true);
      // Node 0 goes to the first waiter (earlier place); nodes 1 and 2, a quorum, to this one.
      const next = await within(waiting, 5_000, 'the waiter, handed nodes 1 and 2 by the release');
      assert.equal(await next.release(), true);
      await (await within(firstWaiting, 5_000, 'the waiter on node 0')).release();
    } finally {
      await Promise.all([...holderClients, ...waiterClients].map((c) => c.close()));
    }
  });

  // Issue 20 item 5: the line was ordered by each caller's wall clock as sent, so a clock 60 s ahead
  // waited behind everyone who joined in the next 60 s, and one 60 s behind went before everyone.
  test('a caller whose wall clock is off moves in the line by at most PLACE_TOLERANCE_MS', async () => {
    const kind = clientKinds[0] as ClientKind;
    const clients = await Promise.all([0, 1, 2].map((i) => kind.create((servers[i] as RedisServer).url)));
    try {
      const lockName = `redlock-wrong-clocks-${process.pid}`;
      const keys = lockKeys(PREFIX, lockName);
      const nodes = clients.map((c) => c.client);
      // Each waiter stands for a process of its own: none queues behind another in this one.
      const options = {
        ttlMs: 20_000,
        retryDelayMs: Number.POSITIVE_INFINITY,
        waiterTtlMs: 30_000,
        maxLocalHolds: 1,
      };
      const skewed = (offsetMs: number) => ({
        now: () => performance.now(),
        wallNow: () => Date.now() + offsetMs,
      });
      const holder = await new RedlockMutex(nodes, lockName, options).acquire();
      await heldOnEveryNode(clients, lockName, holder);
      const served: string[] = [];
      const join = async (label: string, offsetMs: number, count: number) => {
        const waiting = new RedlockMutex(nodes, lockName, { ...options, clock: skewed(offsetMs) })
          .acquire({ timeoutMs: 15_000 })
          .then((lease) => {
            served.push(label);
            return lease.release();
          });
        await until(async () => {
          const sizes = await Promise.all(clients.map((c) => c.command('ZCARD', keys.line)));
          return sizes.every((size) => Number(size) === count);
        }, `${label} in line on every node`);
        // Its place on each node, as that node recorded it.
        const places = await Promise.all(
          clients.map(async (c) => {
            const [last] = (await c.command('ZRANGE', keys.line, '-1', '-1')) as string[];
            return Number(await c.command('ZSCORE', keys.line, last as string));
          }),
        );
        return { waiting, place: Math.max(...places) };
      };
      const ahead = await join('60 s ahead', 60_000, 1);
      assert.ok(
        ahead.place <= Date.now() + PLACE_TOLERANCE_MS,
        `placed at most ${PLACE_TOLERANCE_MS} ms ahead (${ahead.place - Date.now()} ms)`,
      );
      await until(() => Date.now() > ahead.place, 'the wall clock passed its place');
      const honest = await join('right', 0, 2);
      await until(() => Date.now() > honest.place + PLACE_TOLERANCE_MS, 'the tolerance passed since');
      const behind = await join('60 s behind', -60_000, 3);
      assert.ok(behind.place > honest.place, 'no earlier than its join less the tolerance');
      await holder.release();
      await within(Promise.all([ahead.waiting, honest.waiting, behind.waiting]), 10_000, 'every waiter');
      assert.deepEqual(served, ['60 s ahead', 'right', '60 s behind'], 'served in the order they joined');
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  test('waiters are served in the order of their places in the line, the same on every node', async () => {
    const kind = clientKinds[0] as ClientKind;
    const sets = await Promise.all(
      [0, 1, 2, 3].map(() => Promise.all([0, 1, 2].map((i) => kind.create((servers[i] as RedisServer).url)))),
    );
    // Settled before the clients close, so a failed assertion leaves no acquire to reject unheard.
    const waiting: Promise<void>[] = [];
    let holder: Lease | undefined;
    try {
      const lockName = `redlock-line-${process.pid}`;
      const keys = lockKeys(PREFIX, lockName);
      // A node may take a loaded machine's time to answer (50 ms by default): under load a waiter
      // counted slow nodes as silent, held a minority, and timed out after 210 attempts.
      const locks = sets.map(
        (set) =>
          new RedlockMutex(
            set.map((c) => c.client),
            lockName,
            // Places live 30 s (default 1 s): see the hand-off-after window test below.
            { ttlMs: 10_000, nodeTimeoutMs: 1_000, waiterTtlMs: 30_000 },
          ),
      );
      holder = await (locks[0] as RedlockMutex).acquire();
      await heldOnEveryNode(sets[0] as TestClient[], lockName, holder);
      const order: number[] = [];
      for (const i of [1, 2, 3]) {
        waiting.push(
          (locks[i] as RedlockMutex).acquire({ timeoutMs: 8_000 }).then(async (lease) => {
            order.push(i);
            await lease.release();
          }),
        );
        // The next waiter starts once this one is in the line on every node (places are ms: wait
        // for the clock to move on too, so the places differ).
        const set = sets[0] as TestClient[];
        await until(
          async () =>
            (await Promise.all(set.map(async (c) => Number(await c.command('ZCARD', keys.line))))).every(
              (n) => n === i,
            ),
          `waiter ${i} is in every line`,
        );
        const joinedAt = Date.now();
        await until(async () => Date.now() > joinedAt, 'the wall clock moved on');
      }
      // Every node has the same waiters in the same order.
      let seen = '';
      await until(
        async () => {
          const lines = await Promise.all(
            (sets[0] as TestClient[]).map(
              async (c) => (await c.command('ZRANGE', keys.line, '0', '-1')) as string[],
            ),
          );
          seen = JSON.stringify(lines);
          return lines.every(
            (line) => line.length === 3 && JSON.stringify(line) === JSON.stringify(lines[0]),
          );
        },
        'every node has the same line',
        5_000,
      ).catch((error: unknown) => {
        throw new Error(`the nodes' lines differ: ${seen}`, { cause: error });
      });
      assert.equal(await holder.release(), true);
      await within(Promise.all(waiting), 8_000, 'every waiter got the lock');
      assert.deepEqual(order, [1, 2, 3], 'in the order they joined');
    } finally {
      await holder?.release();
      await Promise.allSettled(waiting);
      await Promise.all(sets.flat().map((c) => c.close()));
    }
  });

  test("hand-off-after window: a releaser asking again keeps the lock within the first waiter's window, not after; a waiter wakes by itself when its window ends", async () => {
    const kind = clientKinds[0] as ClientKind;
    const sets = await Promise.all(
      [0, 1].map(() => Promise.all([0, 1, 2].map((i) => kind.create((servers[i] as RedisServer).url)))),
    );
    try {
      const lockName = `redlock-window-${process.pid}`;
      const keys = lockKeys(PREFIX, lockName);
      const windowMs = 1_500;
      // Places live 30 s (default 1 s, renewed every third of it): on a loaded machine a renewal
      // timer late by two thirds of a second let the waiter's place lapse, and the release after the
      // window freed the lock instead of handing it over (CI: "the releaser no longer gets ahead").
      // Nodes time out at 500 ms (default 50): the waiter's own look at its window's end comes a few
      // ms before the release after it, and a node answering that look late made the waiter leave
      // that node's line and join again, so the release there freed the lock (CI, 2026-11-29).
      const options = {
        ttlMs: 20_000,
        handOffAfterMs: windowMs,
        retryDelayMs: 60_000,
        waiterTtlMs: 30_000,
        nodeTimeoutMs: 500,
      };
      const [holderSet, waiterSet] = sets as [TestClient[], TestClient[]];
      const holder = new RedlockMutex(
        holderSet.map((c) => c.client),
        lockName,
        options,
      );
      const waiter = new RedlockMutex(
        waiterSet.map((c) => c.client),
        lockName,
        options,
      );
      // The waiter's place when it is in every node's line (alone), else undefined.
      const inLine = async () => {
        const counts = await Promise.all(holderSet.map((c) => c.command('ZCARD', keys.line)));
        if (!counts.every((n) => Number(n) === 1)) return undefined;
        const node0 = holderSet[0] as TestClient;
        const [member] = (await node0.command('ZRANGE', keys.line, '0', '0')) as string[];
        return Number(await node0.command('ZSCORE', keys.line, member as string));
      };
      const first = await holder.acquire();
      await heldOnEveryNode(holderSet, lockName, first);
      let waiterLease: Lease | undefined;
      const waiting = waiter.acquire({ timeoutMs: 15_000 }).then((lease) => {
        waiterLease = lease;
        return lease;
      });
      await until(async () => (await inLine()) !== undefined, 'the waiter is in every line');
      const place = (await inLine()) as number;
      // Within the window: the release frees the lock and the releaser takes it again.
      assert.equal(await first.release(), true);
      const again = await holder.tryAcquire();
      assert.ok(again, "the releaser keeps the lock within the waiter's window");
      assert.ok(Date.now() < place + windowMs, 'still within the window (raise windowMs on a slow machine)');
      assert.equal(waiterLease, undefined, 'the waiter still waits');
      // After the window: the release hands the lock to the waiter, before the releaser.
      await until(async () => Date.now() > place + windowMs + 5, 'the window is over', windowMs + 1_000);
      assert.equal(await again.release(), true);
      assert.equal(await holder.tryAcquire(), null, 'the releaser no longer gets ahead of the waiter');
      const handed = await within(waiting, 5_000, 'the waiter is handed the lock');
      assert.equal(await handed.release(), true);

      // A release within the window that nobody follows: the waiter wakes by itself when its window
      // ends (its retryDelayMs is a minute; a window shorter than a third of the place's lifetime, so
      // the waiter's renewal of its place comes later).
      const shortMs = 200;
      const shortOptions = { ...options, handOffAfterMs: shortMs };
      const shortHolder = new RedlockMutex(
        holderSet.map((c) => c.client),
        `${lockName}-short`,
        shortOptions,
      );
      const shortWaiter = new RedlockMutex(
        waiterSet.map((c) => c.client),
        `${lockName}-short`,
        shortOptions,
      );
      const shortKeys = lockKeys(PREFIX, `${lockName}-short`);
      const second = await shortHolder.acquire();
      await heldOnEveryNode(holderSet, `${lockName}-short`, second);
      const alone = shortWaiter.acquire({ timeoutMs: 15_000 });
      const node0 = holderSet[0] as TestClient;
      await until(
        async () => Number(await node0.command('ZCARD', shortKeys.line)) === 1,
        'the waiter is in line',
      );
      const [member] = (await node0.command('ZRANGE', shortKeys.line, '0', '0')) as string[];
      const secondPlace = Number(await node0.command('ZSCORE', shortKeys.line, member as string));
      assert.equal(await second.release(), true);
      const woken = await within(alone, 5_000, 'the waiter takes the free lock');
      assert.ok(Date.now() >= secondPlace + shortMs, 'not before its window ended');
      assert.equal(await woken.release(), true);
    } finally {
      await Promise.all(sets.flat().map((c) => c.close()));
    }
  });

  test('a waiter that holds a minority gives it back rather than block that node', async () => {
    const clients = await Promise.all(
      [0, 1, 2].map((i) => (clientKinds[0] as ClientKind).create((servers[i] as RedisServer).url)),
    );
    try {
      const lockName = `redlock-minority-${process.pid}`;
      const keys = lockKeys(PREFIX, lockName);
      // Held by someone else on nodes 1 and 2: the waiter can only ever win node 0.
      for (const c of clients.slice(1)) await c.command('SET', keys.lock, OTHER_OWNER, 'PX', '20000');
      const lock = new RedlockMutex(
        clients.map((c) => c.client),
        lockName,
        { ttlMs: 20_000, nodeTimeoutMs: 50 },
      );
      const controller = new AbortController();
      const waiting = lock.acquire({ signal: controller.signal }).catch((error: unknown) => error);
      const node0 = clients[0] as TestClient;
      await until(async () => (await ownerOn(node0, lockName)) !== undefined, 'the waiter wins node 0');
      await until(
        async () => (await ownerOn(node0, lockName)) === undefined,
        'it gives node 0 back while it waits',
        3_000,
      );
      controller.abort(new Error('done'));
      assert.equal(((await waiting) as Error).message, 'done');
      await until(
        async () => (await ownerOn(node0, lockName)) === undefined,
        'nothing is left on node 0 once it gave up',
        3_000,
      );
      assert.equal(Number(await node0.command('ZCARD', keys.line)), 0, 'nor in its line');
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  // A waiter that cannot subscribe polls; its hand-offs reach no subscriber, and every node skipped
  // it (as if its process were gone) while the waiters that can subscribe kept the lock busy, so it
  // never found a quorum free and timed out. One ioredis and one node-redis kind.
  for (const kind of [clientKinds[0], clientKinds[3]] as ClientKind[]) {
    test(`a waiter that cannot subscribe gets the lock while waiters that can keep it busy (${kind.name})`, async () => {
      const nodes = servers.slice(0, 3);
      const busyClients = await Promise.all(
        [0, 1, 2].map(() => Promise.all(nodes.map((server) => kind.create(server.url)))),
      );
      const pollerClients = await Promise.all(
        nodes.map(async (server) => kind.create(await noSubscribeUrl(server))),
      );
      const lockName = `redlock-poller-${kind.name}-${process.pid}`;
      const lockOn = (set: readonly TestClient[]) =>
        new RedlockMutex(
          set.map((c) => c.client),
          lockName,
          { ttlMs: 10_000 },
        );
      try {
        const busy = await keepBusy(busyClients.map(lockOn));
        try {
          const lease = await lockOn(pollerClients).acquire({ timeoutMs: 8_000 });
          const before = busy.acquisitions();
          assert.equal(await lease.release(), true);
          await until(async () => busy.acquisitions() > before, 'the busy clients go on after it');
        } finally {
          await busy.stop();
        }
      } finally {
        await Promise.all([...busyClients.flat(), ...pollerClients].map((c) => c.close()));
      }
    });
  }
});

function redlockSuite(kind: ClientKind, servers: readonly RedisServer[]): void {
  describe(kind.name, () => {
    /** Direct clients, one per server. */
    const live: TestClient[] = [];
    /** Clients whose every request vanishes (their proxies black-hole), one per server. */
    const dead: TestClient[] = [];
    const proxies: FaultProxy[] = [];
    const name = nameMaker(`redlock-${kind.name}`);
    let unhandled: ReturnType<typeof watchUnhandledRejections>;

    before(async () => {
      for (const server of servers) {
        live.push(await kind.create(server.url));
        const proxy = await FaultProxy.start({ port: server.port });
        proxies.push(proxy);
        dead.push(await kind.create(proxy.url));
        proxy.blackhole();
      }
      unhandled = watchUnhandledRejections();
    });
    after(async () => {
      unhandled.stop();
      assert.deepEqual(unhandled.reasons, [], 'no unhandled rejections');
      for (const proxy of proxies) await proxy.close();
      await Promise.all([...live, ...dead].map((c) => c.close().catch(() => {})));
    });

    for (const nodes of [3, 5]) {
      // 3 nodes: every mix of free, held and down (27 masks); 5 nodes: every subset held, and every
      // subset down (2 × 32 masks), which covers each count of each kind.
      const all =
        nodes === 3
          ? masks(3, ['free', 'held', 'down'])
          : [...masks(5, ['free', 'held']), ...masks(5, ['free', 'down'])];
      test(`${nodes} nodes: acquisition succeeds exactly when a quorum is free (${all.length} masks), and a failed one leaves no key`, async () => {
        const quorum = Math.floor(nodes / 2) + 1;
        // Masks are independent (each its own lock name) and most wait out a down node's timeout:
        // a few at a time, so the file's time is not their timeouts end to end.
        for (let first = 0; first < all.length; first += MASKS_AT_ONCE) {
          await Promise.all(all.slice(first, first + MASKS_AT_ONCE).map(checkMask));
        }
        async function checkMask(mask: NodeState[]): Promise<void> {
          const lockName = name();
          const clients: RedisClient[] = mask.map((state, i) =>
            state === 'down' ? (dead[i] as TestClient).client : (live[i] as TestClient).client,
          );
          for (const [i, state] of mask.entries()) {
            if (state === 'held') {
              await live[i]?.command('SET', lockKeys(PREFIX, lockName).lock, OTHER_OWNER, 'PX', '60000');
            }
          }
          // Generous for a loaded machine: a free node that answers late would read as a down one
          // (at 200 ms a Valkey GLIDE node did, in a clean-clone CI run; at 400 ms a held node on
          // node-redis v6 did, at a load average of 15; at 600 ms two free nodes did, node-redis v6
          // again, at a load average of 12).
          // The reply bound covers a down node's timeout twice (the attempt, then its give-back).
          const lock = new RedlockMutex(clients, lockName, {
            ttlMs: 6_000,
            nodeTimeoutMs: 1_200,
            replyTimeoutMs: 5_000,
          });
          const free = mask.filter((s) => s === 'free').length;
          const held = mask.filter((s) => s === 'held').length;
          const label = mask.join(',');
          let lease: Lease | null = null;
          let error: unknown;
          // The wall clock in µs before the release: its stamps are at least this.
          let releasedFrom = 0;
          try {
            lease = await within(lock.tryAcquire(), 8_000, `tryAcquire [${label}]`);
          } catch (caught) {
            error = caught;
          }
          if (free >= quorum) {
            assert.ok(lease, `[${label}] acquired`);
            const owners = await Promise.all(
              mask.map((s, i) => (s === 'free' ? ownerOn(live[i] as TestClient, lockName) : undefined)),
            );
            const ours = owners.filter((o) => o === lease.token).length;
            assert.ok(ours >= quorum, `[${label}] a quorum holds the token`);
            releasedFrom = Date.now() * 1000;
            assert.equal(await lease.release(), true, `[${label}] released`);
          } else if (held >= nodes - quorum + 1) {
            assert.equal(error, undefined, `[${label}] contention is not an error`);
            assert.equal(lease, null, `[${label}] not acquired`);
          } else {
            assert.ok(error instanceof QuorumError, `[${label}] QuorumError, got ${String(error)}`);
            assert.equal(error.code, 'NO_QUORUM');
            assert.equal(error.quorum, quorum);
            // A down node is timed out, or still pending when the others had decided it already, or
            // failed with its client's own timeout (Valkey GLIDE's requestTimeout, 250 ms: a server
            // check sent by the mask before, still unanswered, rejects during this one).
            const timedOut = (n: (typeof error.nodes)[number]) =>
              n.outcome === 'pending' ||
              (n.outcome === 'error' && n.error instanceof Error && n.error.name === 'TimeoutError');
            assert.deepEqual(
              error.nodes.map((n) => (timedOut(n) ? 'timed-out' : n.outcome)),
              mask.map((s) => (s === 'free' ? 'won' : s === 'held' ? 'held' : 'timed-out')),
              `[${label}] each node's outcome`,
            );
          }
          // Nothing of this attempt is left on any reachable node: held ones keep their owner.
          for (const [i, state] of mask.entries()) {
            if (state === 'down') continue;
            // A release settles once a quorum answered: the other nodes' releases may still be on
            // their way (each after the token's earlier calls to its node, up to a third of the TTL:
            // 2 s here, then its own round trip), so a free node is read once this release ran
            // there (its tombstone, kept a minute: not the key, which would also go by expiring).
            if (lease && state === 'free') {
              const { token } = lease;
              await until(
                () => releaseRanSince(live[i] as TestClient, PREFIX, lockName, token, releasedFrom),
                `[${label}] node ${i} ran the release`,
                10_000,
              );
            }
            const owner = await ownerOn(live[i] as TestClient, lockName);
            assert.equal(
              owner,
              state === 'held' ? OTHER_OWNER : undefined,
              `[${label}] node ${i} after the attempt`,
            );
          }
        }
      });
    }

    test('a lease outlives a minority of nodes lost while held, and is lost with a majority', async () => {
      const lockName = name();
      // Clients through proxies that forward, so nodes can be lost (black-holed) while held.
      const proxied = await Promise.all(servers.slice(0, 3).map((s) => FaultProxy.start({ port: s.port })));
      const clients = await Promise.all(proxied.map((p) => kind.create(p.url)));
      try {
        const lock = new RedlockMutex(
          clients.map((c) => c.client),
          lockName,
          // A node answering later than nodeTimeoutMs counts as lost: 300 ms, since at 100 ms a
          // loaded machine's late answers lost the lease with only a minority black-holed.
          { ttlMs: 1_200, nodeTimeoutMs: 300 },
        );
        const lease = await lock.acquire();
        (proxied[0] as FaultProxy).blackhole();
        // Three TTLs: every extension since needed the two nodes left.
        const ownedUntil = performance.now() + 3_600;
        await until(async () => {
          assert.ok(lease.isHeld, 'still held with a minority lost');
          return performance.now() > ownedUntil;
        }, 'three TTLs passed');
        assert.equal(lease.signal.aborted, false);
        for (const i of [1, 2]) {
          assert.equal(await ownerOn(live[i] as TestClient, lockName), lease.token, `node ${i} holds it`);
        }
        (proxied[1] as FaultProxy).blackhole();
        const reason = await within(
          abortedWith(lease.signal),
          3_000,
          'the signal aborts with a majority lost',
        );
        assert.ok(reason instanceof LockLostError);
        await lease.release().catch(() => {});
      } finally {
        for (const p of proxied) await p.close();
        await Promise.all(clients.map((c) => c.close().catch(() => {})));
      }
    });

    test('a node slower than the per-node timeout does not hold up acquire, extend or release', async () => {
      const lockName = name();
      const slow = await FaultProxy.start({ port: (servers[2] as RedisServer).port });
      const slowClient = await kind.create(slow.url);
      try {
        // Each call settles once nodes 0 and 1 answered. Node 2 answers after 20 s; a call that
        // waited for it would take its node timeout (3 s: a third of the TTL) at least, so each is
        // timed on its own against that (nodes 0 and 1 answer a busy machine well within it).
        slow.delay = 10_000;
        const clients = [live[0], live[1], slowClient].map((c) => (c as TestClient).client);
        const nodeTimeoutMs = 3_000;
        const lock = new RedlockMutex(clients, lockName, {
          ttlMs: 30_000,
          nodeTimeoutMs,
          replyTimeoutMs: 10_000,
        });
        const timed = async <T>(call: () => Promise<T>): Promise<[T, number]> => {
          const started = performance.now();
          const result = await call();
          return [result, performance.now() - started];
        };
        const [lease, acquireMs] = await timed(() => lock.acquire());
        const [, extendMs] = await timed(() => lease.extend());
        const [released, releaseMs] = await timed(() => lease.release());
        assert.equal(released, true);
        for (const [call, ms] of [
          ['acquire', acquireMs],
          ['extend', extendMs],
          ['release', releaseMs],
        ] as const)
          assert.ok(ms < nodeTimeoutMs, `${call} took ${Math.round(ms)} ms: it waited for the slow node`);
      } finally {
        await slow.close();
        await slowClient.close().catch(() => {});
      }
    });

    test('contending waiters on 3 nodes: one holder at a time, increasing fencing tokens, everyone gets through', async () => {
      const lockName = name();
      const contenders = 4;
      const rounds = 15;
      const extra = await Promise.all(
        Array.from({ length: contenders - 1 }, () =>
          Promise.all(servers.slice(0, 3).map((s) => kind.create(s.url))),
        ),
      );
      const clientSets = [live.slice(0, 3), ...extra];
      let inside = 0;
      let lastToken = 0;
      const tokens: number[] = [];
      try {
        await within(
          Promise.all(
            clientSets.map(async (set) => {
              const lock = new RedlockMutex(
                set.map((c) => c.client),
                lockName,
                { ttlMs: 5_000 },
              );
              for (let i = 0; i < rounds; i += 1) {
                await lock.using(async (_signal, lease) => {
                  inside += 1;
                  assert.equal(inside, 1, 'one holder at a time');
                  assert.ok(
                    lease.fencingToken > lastToken,
                    `fencing tokens grow: ${lease.fencingToken} after ${lastToken}`,
                  );
                  lastToken = lease.fencingToken;
                  tokens.push(lease.fencingToken);
                  await new Promise((resolve) => setImmediate(resolve));
                  inside -= 1;
                });
              }
            }),
          ),
          30_000,
          'every contender got through',
        );
        assert.equal(tokens.length, contenders * rounds);
      } finally {
        await Promise.all(extra.flat().map((c) => c.close()));
      }
    });
  });
}
