/**
 * RedlockSemaphore on real redis-servers (3 independent masters): the guarantees docs/guarantees.md
 * claims for it, each by a test that fails when it breaks. At most `limit` permits held through a
 * quorum, also when a minority of servers has its permits taken by someone else; a minority down
 * still grants, a majority down refuses with a `QuorumError`; fencing tokens increase, also across
 * quorums that share a single node (the write-back); release and extension reach every server; a
 * waiter is handed its permits by the release (its retry delay is a minute), not by polling.
 *
 * A node that is "down" is a client connected through a fault proxy that black-holes every byte.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Clock } from '../../src/clock.js';
import {
  type Lease,
  LockTimeoutError,
  QuorumError,
  RedlockSemaphore,
  type RedlockSemaphoreOptions,
  Semaphore,
} from '../../src/index.js';
import { lockKeys, semaphoreKeys } from '../../src/protocol/keys.js';
import { scripts } from '../../src/protocol/scripts.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';
import { clientKinds, ioredisKind, type TestClient } from '../fixtures/clients.js';
import { nameMaker, sleep, until, watchUnhandledRejections } from '../fixtures/helpers.js';
import {
  attemptAfterRelease,
  interceptScripts,
  lateGiveBack,
  lateNoScript,
  releaseRanSince,
  type ScriptCalls,
  tombstoneKeptMs,
  tombstoneKeptMsOnceReleased,
} from '../fixtures/late-give-back.js';

const PREFIX = 'locksmith';
const SERVERS = 3;

/** How many holders one server's sorted set has (expired or not: a release removes its member). */
async function holdersOn(client: TestClient, name: string): Promise<number> {
  return Number(await client.command('ZCARD', lockKeys(PREFIX, name).lock));
}

/** One server's holders of `name`, as their members (each ends with its holder's token). */
async function membersOn(client: TestClient, name: string): Promise<string[]> {
  return (await client.command('ZRANGE', lockKeys(PREFIX, name).lock, '0', '-1')) as string[];
}

/**
 * Resolves once every server ran the release of `token` that began at `releasedFrom` (µs of the
 * wall clock: `Date.now() * 1000` read before `release()`). release() answers once a quorum
 * released; until the third server ran it too, the read after a grant there counts the released
 * permit as held, and a try at the limit gives its grant back (as designed).
 */
async function releasedEverywhere(
  clients: readonly TestClient[],
  name: string,
  token: string,
  releasedFrom: number,
) {
  await until(
    async () =>
      (await Promise.all(clients.map((c) => releaseRanSince(c, PREFIX, name, token, releasedFrom)))).every(
        Boolean,
      ),
    `every server ran the release of ${token}`,
  );
}

/** How many waiters one server's queue has. */
async function queuedOn(client: TestClient, name: string): Promise<number> {
  return Number(await client.command('LLEN', lockKeys(PREFIX, name).queue));
}

describe('RedlockSemaphore', () => {
  const servers: RedisServer[] = [];
  let live: TestClient[] = [];
  const name = nameMaker('rsem');
  watchUnhandledRejections();
  before(async () => {
    for (let i = 0; i < SERVERS; i += 1) servers.push(await startRedis());
    live = await Promise.all(servers.map((s) => ioredisKind.create(s.url)));
  });
  after(async () => {
    await Promise.all(live.map((c) => c.close()));
    await Promise.all(servers.map((s) => s.stop()));
  });
  const clients = () => live.map((c) => c.client);

  /**
   * `workers` callers acquire and release through `semaphore` 5 times each, running `whileHeld`
   * while they hold: the most of them holding at once, and every lease's fencing token.
   */
  async function heldAtOnce(
    semaphore: RedlockSemaphore,
    workers: number,
    whileHeld: () => Promise<unknown>,
  ): Promise<{ most: number; tokens: number[] }> {
    let holding = 0;
    let most = 0;
    const tokens: number[] = [];
    const worker = async () => {
      for (let round = 0; round < 5; round += 1) {
        const lease = await semaphore.acquire({ timeoutMs: 60_000 });
        holding += 1;
        most = Math.max(most, holding);
        tokens.push(lease.fencingToken);
        await whileHeld();
        holding -= 1;
        await lease.release();
      }
    };
    await Promise.all(Array.from({ length: workers }, worker));
    return { most, tokens };
  }

  /** Waits until every server's queue of `lockName` has `waiters` entries. */
  const queuedEverywhere = (lockName: string, waiters: number, what: string) =>
    until(async () => {
      const queued = await Promise.all(live.map((c) => queuedOn(c, lockName)));
      return queued.every((n) => n === waiters);
    }, what);

  /**
   * Runs `run` with a RedlockSemaphore of a new name on a client per server through a fault proxy
   * (to black-hole), closing both after.
   */
  async function throughProxies(
    options: Partial<RedlockSemaphoreOptions> & { limit: number },
    run: (proxied: FaultProxy[], semaphore: RedlockSemaphore) => Promise<void>,
  ): Promise<void> {
    const proxied = await Promise.all(servers.map((s) => FaultProxy.start({ port: s.port })));
    const own = await Promise.all(proxied.map((p) => ioredisKind.create(p.url)));
    try {
      const semaphore = new RedlockSemaphore(
        own.map((c) => c.client),
        name(),
        options,
      );
      await run(proxied, semaphore);
    } finally {
      for (const p of proxied) await p.close();
      await Promise.all(own.map((c) => c.close().catch(() => {})));
    }
  }

  /**
   * Acquires through `semaphore`, whose first grant server 1 (`server1`) saw given back and
   * attempted again; after `settleMs` (for what is still on its way), a quorum holds the valid
   * lease's permit. Releases it.
   */
  async function heldOnAQuorum(semaphore: RedlockSemaphore, server1: ScriptCalls, settleMs: number) {
    const lease = await semaphore.acquire({ timeoutMs: 5_000 });
    const calls = `server 1's calls: ${server1.calls}`;
    assert.ok(server1.acquires() >= 2, `the first grant was given back, then attempted again (${calls})`);
    await sleep(settleMs);
    assert.ok(lease.isHeld, 'the lease counts itself valid');
    const observer = new RedlockSemaphore(clients(), semaphore.name, { limit: 1, ttlMs: 1_000 });
    const { holders, nodes } = await observer.inspect();
    const perNode = nodes.map((n) => n?.holders.map((h) => (h.token === lease.token ? 'lease' : 'other')));
    assert.ok(
      holders.some((h) => h.token === lease.token),
      `a quorum holds the valid lease's permit (per server: ${JSON.stringify(perNode)}; ${calls})`,
    );
    await lease.release();
  }

  for (const kind of clientKinds) {
    test(`${kind.name}: limit permits are granted, one more is not, and a release frees one`, async () => {
      const own = await Promise.all(servers.map((s) => kind.create(s.url)));
      try {
        // Nodes get 1 s to answer: at the default 50 ms a busy machine's late answer is a refusal.
        const semaphore = new RedlockSemaphore(
          own.map((c) => c.client),
          name(),
          { limit: 2, ttlMs: 10_000, nodeTimeoutMs: 1_000 },
        );
        const a = await semaphore.acquire();
        const b = await semaphore.tryAcquire();
        assert.ok(b, 'the second permit is granted');
        assert.equal(await semaphore.tryAcquire(), null, 'a third is refused');
        const state = await semaphore.inspect();
        assert.equal(state.permitsHeld, 2);
        assert.deepEqual(state.holders.map((h) => h.token).sort(), [a.token, b.token].sort());
        const releasedFrom = Date.now() * 1000;
        assert.equal(await b.release(), true);
        await releasedEverywhere(own, semaphore.name, b.token, releasedFrom);
        const c = await semaphore.tryAcquire();
        assert.ok(c, 'a released permit is granted again');
        await Promise.all([a.release(), c.release()]);
      } finally {
        await Promise.all(own.map((c) => c.close()));
      }
    });
  }

  test('permits are all or none: two permits are refused while only one is free', async () => {
    const semaphore = new RedlockSemaphore(clients(), name(), { limit: 2, ttlMs: 10_000 });
    const one = await semaphore.acquire();
    assert.equal(await semaphore.tryAcquire({ permits: 2 }), null);
    const lockName = semaphore.name;
    for (const c of live) assert.equal(await holdersOn(c, lockName), 1, 'the refused try left nothing');
    const releasedFrom = Date.now() * 1000;
    await one.release();
    await releasedEverywhere(live, lockName, one.token, releasedFrom);
    const two = await semaphore.tryAcquire({ permits: 2 });
    assert.ok(two);
    await two.release();
  });

  test('at most limit holders through a quorum, also with a minority of servers full of other holders', async () => {
    const lockName = name();
    // Server 0's permits are all held by someone else (a single-server Semaphore of the same name):
    // the quorum of servers 1 and 2 still grants, and never more than the limit.
    const squatter = new Semaphore(live[0]?.client as TestClient['client'], lockName, {
      limit: 2,
      ttlMs: 60_000,
    });
    const squat = await squatter.acquire({ permits: 2 });
    const semaphore = new RedlockSemaphore(clients(), lockName, { limit: 2, ttlMs: 10_000 });
    const { most, tokens } = await heldAtOnce(semaphore, 6, async () => {
      // A round trip while held, so the others' attempts interleave with this hold.
      assert.ok((await semaphore.inspect()).permitsHeld <= 2, 'the quorum counts at most the limit');
    });
    assert.ok(most <= 2, `${most} holders at once with a limit of 2`);
    assert.equal(tokens.length, 30, 'every caller got through');
    assert.equal(new Set(tokens).size, 30, 'every acquisition has its own fencing token');
    // With the squatter's permits, a third server full too leaves no quorum: a single try is refused.
    const other = new Semaphore(live[1]?.client as TestClient['client'], lockName, {
      limit: 2,
      ttlMs: 60_000,
    });
    const squat2 = await other.acquire({ permits: 2 });
    assert.equal(await semaphore.tryAcquire(), null, 'two servers full: no quorum grants');
    await Promise.all([squat.release(), squat2.release()]);
  });

  test('three quorums over three servers with limit 2: the third caller is refused (the read after the grant)', async () => {
    const lockName = name();
    const key = lockKeys(PREFIX, lockName).lock;
    // P holds servers 0 and 2, Q servers 1 and 2 (members as semaphore-holders.lua writes them):
    // two permits held through a quorum each; servers 0 and 1 have a permit free, server 2 none.
    const holdOn = async (node: number, member: string) => {
      const client = live[node] as TestClient;
      const [seconds] = (await client.command('TIME')) as [string, string];
      await client.command('ZADD', key, String(Number(seconds) * 1000 + 60_000), member);
    };
    await holdOn(0, '1|1|0|P');
    await holdOn(2, '1|1|0|P');
    await holdOn(1, '1|2|0|Q');
    await holdOn(2, '1|2|0|Q');
    const semaphore = new RedlockSemaphore(clients(), lockName, { limit: 2, ttlMs: 10_000 });
    // Servers 0 and 1 grant it a quorum, and every server holds at most 2: only the read after
    // the grant sees three holders of a quorum each.
    assert.equal(await semaphore.tryAcquire(), null, 'a third holder would exceed the limit');
    for (const node of [0, 1])
      assert.equal(await holdersOn(live[node] as TestClient, lockName), 1, 'given back');
    assert.equal((await semaphore.inspect()).permitsHeld, 2);
    await Promise.all(live.map((c) => c.command('DEL', key)));
    assert.ok(await semaphore.tryAcquire(), 'granted once they are gone');
  });

  test('a minority down still grants; a majority down refuses (QuorumError, or a typed timeout) and keeps nothing', async () => {
    await throughProxies({ limit: 2, ttlMs: 5_000, nodeTimeoutMs: 200 }, async (proxied, semaphore) => {
      const lockName = semaphore.name;
      (proxied[0] as FaultProxy).blackhole();
      const lease = await semaphore.acquire({ timeoutMs: 10_000 });
      assert.ok(lease.fencingToken > 0);
      for (const i of [1, 2]) assert.equal(await holdersOn(live[i] as TestClient, lockName), 1);
      await lease.release();
      (proxied[1] as FaultProxy).blackhole();
      // A single try says why: no quorum. A waiting call keeps trying its minority until its
      // deadline (as the RedlockMutex's does: the servers may come back), then says it timed out.
      await assert.rejects(semaphore.tryAcquire(), QuorumError);
      await assert.rejects(semaphore.acquire({ timeoutMs: 1_000 }), LockTimeoutError);
      await until(
        async () => (await holdersOn(live[2] as TestClient, lockName)) === 0,
        'the grant is given back',
      );
    });
  });

  test('fencing tokens increase across quorums that share one server (the quorum maximum is written back)', async () => {
    await throughProxies({ limit: 1, ttlMs: 5_000, nodeTimeoutMs: 200 }, async (proxied, semaphore) => {
      const lockName = semaphore.name;
      // Server 2's counter far ahead: the first quorum's token comes from it.
      await (live[2] as TestClient).command('SET', lockKeys(PREFIX, lockName).fence, String(2 ** 52));
      let last = 0;
      for (const down of [0, 2, 1, 0, 2]) {
        for (const [i, p] of proxied.entries()) i === down ? p.blackhole() : p.heal();
        const lease = await semaphore.acquire({ timeoutMs: 10_000 });
        assert.ok(lease.fencingToken > last, `token ${lease.fencingToken} after ${last}`);
        last = lease.fencingToken;
        await lease.release();
      }
      assert.ok(last > 2 ** 52, 'a later quorum without server 2 starts above its token');
    });
  });

  /** A grant as it came back to the client: which server, and the fencing token it handed out. */
  interface GrantReply {
    readonly node: number;
    readonly fencingToken: number;
  }

  /**
   * Runs `run` with a RedlockSemaphore of `lockName` on clients of its own, `total(script)`: how
   * many calls of that script (by its name in `scripts`) they made so far, over every server, and
   * `grants`: the acquire replies that granted, in the order they came back.
   */
  async function withCountedScripts(
    lockName: string,
    options: Partial<RedlockSemaphoreOptions> & { limit: number },
    run: (
      semaphore: RedlockSemaphore,
      total: (script: string) => number,
      grants: readonly GrantReply[],
    ) => Promise<void>,
  ): Promise<void> {
    const own = await Promise.all(servers.map((s) => ioredisKind.create(s.url)));
    try {
      // Loaded, so every call is an EVALSHA the counters see (not NOSCRIPT, then EVAL).
      for (const client of own)
        for (const script of Object.values(scripts)) await client.command('SCRIPT', 'LOAD', script.source);
      const grants: GrantReply[] = [];
      const counts = own.map((c, node) => countScripts(c.client, node, grants));
      const total = (script: string) => counts.reduce((sum, c) => sum + (c.get(script) ?? 0), 0);
      const semaphore = new RedlockSemaphore(
        own.map((c) => c.client),
        lockName,
        options,
      );
      await run(semaphore, total, grants);
    } finally {
      await Promise.all(own.map((c) => c.close().catch(() => {})));
    }
  }

  /**
   * Counts `client`'s script calls (an ioredis client of its own, to server `node`) by script name,
   * and adds each acquire reply that granted to `grants` as it comes back.
   */
  function countScripts(client: unknown, node: number, grants: GrantReply[]): Map<string, number> {
    const names = new Map(Object.entries(scripts).map(([scriptName, script]) => [script.sha1, scriptName]));
    const counts = new Map<string, number>();
    const gated = client as { evalsha: (sha1: string, ...rest: unknown[]) => Promise<unknown> };
    const evalsha = gated.evalsha.bind(gated);
    gated.evalsha = (sha1, ...rest) => {
      const scriptName = names.get(sha1) ?? sha1;
      counts.set(scriptName, (counts.get(scriptName) ?? 0) + 1);
      const reply = evalsha(sha1, ...rest);
      if (scriptName !== 'semaphoreAcquire') return reply;
      return reply.then((value) => {
        const [granted, fencingToken] = value as [number, number];
        if (granted === 1) grants.push({ node, fencingToken: Number(fencingToken) });
        return value;
      });
    };
    return counts;
  }

  /**
   * Sets the fencing counter of `lockName` on `nodes` to `grants` tokens into the current second
   * (server 0's clock), as if they had handed out that many more this second than the others.
   */
  async function countersAhead(lockName: string, nodes: readonly number[], grants: number) {
    const fence = lockKeys(PREFIX, lockName).fence;
    const [seconds] = (await (live[0] as TestClient).command('TIME')) as [string, string];
    for (const node of nodes)
      await (live[node] as TestClient).command('SET', fence, String(Number(seconds) * 1_000_000 + grants));
  }

  for (const behind of [false, true]) {
    const setup = behind ? "server 2's counter behind the others'" : 'the counters alike';
    test(`an uncontended acquisition is a grant and a read on each server, no fencing write-back (${setup})`, async () => {
      // The servers' counters step by whole seconds, so they hand out the same token while they saw
      // the same grants, and a quorum's grants carry one token: no write-back. Two cases part them:
      // a second turning during the acquisition (the servers share this machine's clock: server
      // 0's TIME before and after tells), and, with server 2 behind, a quorum completed by server
      // 2's grant before server 0's or 1's came back (a loaded machine answers in any order). Only
      // an acquisition whose quorum (its first two grants) carried two tokens may write back.
      const lockName = name();
      if (behind) await countersAhead(lockName, [0, 1], 1_000);
      const second = async () => Number(((await (live[0] as TestClient).command('TIME')) as [string])[0]);
      // A node's answer may take a busy machine longer than the default 50 ms: one attempt each.
      const options = { limit: 3, ttlMs: 5_000, nodeTimeoutMs: 1_000 };
      await withCountedScripts(lockName, options, async (semaphore, total, grants) => {
        let last = 0;
        for (let i = 0; i < 10; i += 1) {
          const before = { acquires: total('semaphoreAcquire'), reads: total('semaphoreInspect') };
          const raisesBefore = total('raiseFence');
          const grantsBefore = grants.length;
          const from = await second();
          const lease = await semaphore.acquire();
          const turned = (await second()) !== from;
          assert.ok(lease.fencingToken > last, `token ${lease.fencingToken} after ${last}`);
          last = lease.fencingToken;
          assert.equal(total('semaphoreAcquire') - before.acquires, SERVERS, 'one attempt per server');
          assert.equal(total('semaphoreInspect') - before.reads, SERVERS, 'one read per server');
          const quorum = grants.slice(grantsBefore, grantsBefore + 2);
          const split = quorum[0]?.fencingToken !== quorum[1]?.fencingToken;
          const said = `acquisition ${i}, quorum ${JSON.stringify(quorum)}, a second turned: ${turned}`;
          if (!behind) assert.ok(!split || turned, `the counters alike parted (${said})`);
          const raised = total('raiseFence') - raisesBefore;
          assert.ok(raised === 0 || split, `${raised} write-back(s) of a quorum's one token (${said})`);
          await lease.release();
        }
      });
    });
  }

  test('with limit 1 on three servers no read follows the grant, and one holder at a time', async () => {
    // Each server grants at most one permit and a holder holds two of three servers: two holders
    // would need four grants. So the read after the grant (needed from limit 2 on) is not sent.
    const lockName = name();
    await withCountedScripts(lockName, { limit: 1, ttlMs: 10_000 }, async (semaphore, total) => {
      const { most, tokens } = await heldAtOnce(semaphore, 4, () => sleep(1));
      assert.equal(total('semaphoreInspect'), 0, 'no read after a grant');
      assert.equal(most, 1, `${most} holders at once with a limit of 1`);
      assert.equal(new Set(tokens).size, 20, 'every acquisition has its own fencing token');
    });
  });

  test('a limit stored on the servers above the option does not raise it (with limit 1, nor the read)', async () => {
    // A Semaphore's setLimit(3) on every server: the RedlockSemaphore's option is the quorum's
    // limit, so a second caller is refused all the same.
    const lockName = name();
    const { limit: limitKey } = semaphoreKeys(lockKeys(PREFIX, lockName));
    for (const c of live) await c.command('SET', limitKey, '3');
    for (const limit of [1, 2]) {
      const semaphore = new RedlockSemaphore(clients(), lockName, { limit, ttlMs: 10_000 });
      const leases = [];
      for (let i = 0; i < limit; i += 1) leases.push(await semaphore.acquire());
      assert.equal(await semaphore.tryAcquire(), null, `limit ${limit}: one more is refused`);
      for (const lease of leases) await lease.release();
    }
  });

  test("a Semaphore's setLimit raising a majority's limit hands a limit-1 RedlockSemaphore's waiter nothing", async () => {
    // With limit 1 on three servers no read follows a grant (the servers' own limits keep the
    // quorum's), so no server may hand out a permit past it: setLimit(3) serving the queue there
    // must not make the queued caller a second holder (found in review: it did, on two servers).
    const lockName = name();
    const semaphore = new RedlockSemaphore(clients(), lockName, { limit: 1, ttlMs: 10_000 });
    const held = await semaphore.acquire();
    const waiting = semaphore.acquire({ timeoutMs: 60_000 });
    waiting.catch(() => {}); // awaited below; a failed assertion must not leave it unhandled
    await queuedEverywhere(lockName, 1, 'the second caller queued on every server');
    for (const c of live.slice(0, 2)) await new Semaphore(c.client, lockName, { limit: 1 }).setLimit(3);
    const { lock: holdersKey } = lockKeys(PREFIX, lockName);
    const holding = await Promise.all(live.map((c) => c.command('ZCARD', holdersKey)));
    assert.deepEqual(holding.map(Number), [1, 1, 1], 'a server handed the waiter a permit past the limit');
    assert.ok(held.isHeld);
    await held.release();
    const next = await waiting;
    assert.ok(next.fencingToken > held.fencingToken);
    await next.release();
  });

  test('fencing tokens rise across holders while a second turns, with one server counting behind', async () => {
    // Limit 2, three callers: holders overlap and hand permits on. Servers 0 and 1 have handed out
    // a thousand tokens this second already, server 2 none: its tokens are the lowest until the
    // second turns (and all three start again from its floor). A token is never handed to two
    // holders, and a call that starts after another was granted gets a higher one.
    const lockName = name();
    await countersAhead(lockName, [0, 1], 1_000);
    const granted: { token: number; startedAt: number; grantedAt: number }[] = [];
    const endAt = performance.now() + 1_300;
    const caller = async () => {
      const semaphore = new RedlockSemaphore(clients(), lockName, { limit: 2, ttlMs: 5_000 });
      while (performance.now() < endAt) {
        const startedAt = performance.now();
        const lease = await semaphore.acquire({ timeoutMs: 5_000 });
        granted.push({ token: lease.fencingToken, startedAt, grantedAt: performance.now() });
        await sleep(2);
        await lease.release();
      }
    };
    await Promise.all([caller(), caller(), caller()]);
    const tokens = granted.map((g) => g.token);
    assert.equal(new Set(tokens).size, tokens.length, 'a fencing token handed to two holders');
    const secondsSeen = new Set(tokens.map((t) => Math.floor(t / 1_000_000)));
    assert.ok(secondsSeen.size >= 2, `the run crossed a second (${[...secondsSeen]})`);
    for (const a of granted)
      for (const b of granted)
        if (a.grantedAt < b.startedAt)
          assert.ok(b.token > a.token, `granted ${a.token}, then a later call got ${b.token}`);
  });

  test('two holders granted at once by quorums that share one server get different fencing tokens', async () => {
    // X is granted by servers 0 and 2, Y by servers 1 and 2, at once (limit 5: both hold). Servers 0
    // and 1 start at the same counter, far above server 2's (a token written back there earlier), so
    // each quorum's maximum is K + 1 from its own server, and both are written back to server 2.
    const lockName = name();
    const K = 2 ** 52;
    for (const node of [0, 1])
      await (live[node] as TestClient).command('SET', lockKeys(PREFIX, lockName).fence, String(K));
    const proxied = await Promise.all(servers.map((s) => FaultProxy.start({ port: s.port })));
    const own = await Promise.all(proxied.map((p) => ioredisKind.create(p.url)));
    try {
      // X's client for server 1 and Y's for server 0 go through a black-holed proxy.
      const viewOf = (down: number) =>
        new RedlockSemaphore(
          live.map((c, i) => (i === down ? (own[i] as TestClient).client : c.client)),
          lockName,
          { limit: 5, ttlMs: 5_000, nodeTimeoutMs: 200 },
        );
      (proxied[0] as FaultProxy).blackhole();
      (proxied[1] as FaultProxy).blackhole();
      const [x, y] = await Promise.all([viewOf(1).acquire(), viewOf(0).acquire()]);
      assert.ok(x.fencingToken > K && y.fencingToken > K, `${x.fencingToken}, ${y.fencingToken}`);
      assert.notEqual(x.fencingToken, y.fencingToken, 'a fencing token handed to two holders');
      await Promise.all([x.release(), y.release()]);
    } finally {
      for (const p of proxied) await p.close();
      await Promise.all(own.map((c) => c.close().catch(() => {})));
    }
  });

  test('release and extension reach every server, also one that missed the release at first', async () => {
    await throughProxies(
      { limit: 2, ttlMs: 5_000, nodeTimeoutMs: 200, autoExtend: false },
      async (proxied, semaphore) => {
        const lockName = semaphore.name;
        const lease = await semaphore.acquire();
        await lease.extend(60_000);
        // It settles once a quorum extended; the third server's answer may still be on its way.
        await until(async () => {
          const { nodes } = await semaphore.inspect();
          return nodes.every((node) => (node?.holders[0]?.remainingTtlMs ?? 0) > 10_000);
        }, 'every server extended');
        (proxied[2] as FaultProxy).blackhole();
        assert.equal(await lease.release(), true);
        for (const i of [0, 1]) assert.equal(await holdersOn(live[i] as TestClient, lockName), 0);
        assert.equal(await holdersOn(live[2] as TestClient, lockName), 1, 'server 2 missed it');
        (proxied[2] as FaultProxy).heal();
        (proxied[2] as FaultProxy).resetAll();
        await until(
          async () => (await holdersOn(live[2] as TestClient, lockName)) === 0,
          'the release is re-sent',
        );
      },
    );
  });

  test('a grant given back as unusable is not deleted later by that give-back re-sent after the next attempt', async () => {
    // The acquire call's first grant comes too late to use (its process stalled: a clock skipped 2 s
    // forward here), so the waiting loop gives it back and attempts again with the same token. The
    // give-back fails on server 1 (a reset connection), so QuorumNodes.releaseEverywhere re-sends
    // it there in the background, a few ms later: after the next attempt, which takes servers 0 and
    // 1 (server 2's permit is a squatter's). That re-sent release must not delete server 1's grant:
    // the lease would count a quorum that no longer holds it (the fault suite's
    // lease-outlived-expiry in 'one node slower than nodeTimeoutMs' [RedlockSemaphore]).
    const lockName = name();
    const squatter = new Semaphore(live[2]?.client as TestClient['client'], lockName, {
      limit: 1,
      ttlMs: 60_000,
    });
    const squat = await squatter.acquire();
    // Every script is loaded already, so each call below is one EVALSHA (no NOSCRIPT fallback).
    for (const script of Object.values(scripts)) await live[1]?.command('SCRIPT', 'LOAD', script.source);
    const gated = await ioredisKind.create((servers[1] as RedisServer).url);
    let skewMs = 0;
    const clock: Clock = { now: () => performance.now() + skewMs };
    const server1 = lateGiveBack(
      gated.client,
      { acquire: scripts.semaphoreAcquire, release: scripts.semaphoreRelease },
      () => {
        skewMs += 2_000;
      },
    );
    try {
      const semaphore = new RedlockSemaphore(
        [live[0]?.client, gated.client, live[2]?.client] as TestClient['client'][],
        lockName,
        { limit: 1, ttlMs: 1_000, autoExtend: false, wakeOnRelease: false, retryJitterMs: 0, clock },
      );
      // Longer than the re-send's first back-off (5 ms): a re-sent release has been applied by now.
      await heldOnAQuorum(semaphore, server1, 100);
    } finally {
      await squat.release();
      await gated.close();
    }
  });

  test("a give-back still in flight (NOSCRIPT, then EVAL) is not overtaken by the same call's next attempt", async () => {
    // As above, the first grant is too late to use and is given back. Server 1 does not have the
    // release script (a fresh or restarted server): its EVALSHA is answered NOSCRIPT, slowly (a slow
    // node), and only then is the EVAL sent. The give-back settles on servers 0 and 2 meanwhile,
    // and the call's next attempt (its script loaded there) reaches server 1 ahead of that EVAL,
    // takes it with server 0 (server 2's link broke), and the EVAL then deleted that grant.
    const lockName = name();
    await live[1]?.command('SCRIPT', 'FLUSH');
    for (const script of Object.values(scripts)) {
      if (script !== scripts.semaphoreRelease) await live[1]?.command('SCRIPT', 'LOAD', script.source);
    }
    for (const script of Object.values(scripts)) await live[2]?.command('SCRIPT', 'LOAD', script.source);
    const gated = await Promise.all([1, 2].map((i) => ioredisKind.create((servers[i] as RedisServer).url)));
    let skewMs = 0;
    const clock: Clock = { now: () => performance.now() + skewMs };
    const semaphoreScripts = { acquire: scripts.semaphoreAcquire, release: scripts.semaphoreRelease };
    // Server 1 answers in order, its releases 100 ms late.
    let previous: Promise<unknown> = Promise.resolve();
    const server1 = interceptScripts(gated[0]?.client, semaphoreScripts, (script, count, send) => {
      const sent = send();
      sent.catch(() => {}); // answered (NOSCRIPT) before the caller hears it
      const late = script === 'release' ? sleep(100) : undefined;
      const reply = Promise.all([previous.catch(() => {}), late]).then(() => sent);
      previous = reply;
      if (script !== 'acquire' || count !== 1) return reply;
      return reply.then((r) => {
        skewMs += 2_000;
        return r;
      });
    });
    // Server 2's link breaks after the first attempt.
    interceptScripts(gated[1]?.client, semaphoreScripts, (script, count, send) =>
      script === 'acquire' && count > 1 ? Promise.reject(new Error('Connection is closed.')) : send(),
    );
    try {
      const semaphore = new RedlockSemaphore(
        [live[0]?.client, gated[0]?.client, gated[1]?.client] as TestClient['client'][],
        lockName,
        {
          // Limit 2: the grant is read back (limit 1 on 3 servers has no read), and server 1's
          // late reply to the first attempt lands before that read ends, so the grant is too late.
          limit: 2,
          ttlMs: 1_000,
          nodeTimeoutMs: 300,
          autoExtend: false,
          wakeOnRelease: false,
          retryJitterMs: 0,
          clock,
        },
      );
      // The give-back's EVAL has been answered by now.
      await heldOnAQuorum(semaphore, server1, 300);
    } finally {
      await Promise.all(gated.map((c) => c.close()));
    }
  });

  test("a release is not held back for good by the same token's earlier call that never settles", async () => {
    // Server 2 applies the call's first attempt, but its reply never comes (a connection that hangs,
    // a client without a timeout). The lease holds on servers 0 and 1; its release must still reach
    // server 2, once it waited a bounded time for that attempt (QuorumNodes.inOrder): held back
    // until the attempt settles, it never went out, and server 2 kept the permit for the whole TTL
    // (the fault suite's key-left-behind).
    const lockName = name();
    for (const script of Object.values(scripts)) await live[2]?.command('SCRIPT', 'LOAD', script.source);
    const gated = await ioredisKind.create((servers[2] as RedisServer).url);
    const semaphoreScripts = { acquire: scripts.semaphoreAcquire, release: scripts.semaphoreRelease };
    const server2 = interceptScripts(gated.client, semaphoreScripts, (script, count, send) => {
      if (script !== 'acquire' || count !== 1) return send();
      send().catch(() => {});
      return new Promise(() => {});
    });
    try {
      const semaphore = new RedlockSemaphore(
        [live[0]?.client, live[1]?.client, gated.client] as TestClient['client'][],
        lockName,
        { limit: 1, ttlMs: 10_000, autoExtend: false },
      );
      const lease = await semaphore.acquire({ timeoutMs: 5_000 });
      await until(
        async () => (await holdersOn(live[2] as TestClient, lockName)) === 1,
        'server 2 applied it',
      );
      const releasing = performance.now();
      assert.equal(await lease.release(), true);
      assert.ok(performance.now() - releasing < 1_000, 'released by servers 0 and 1 at once');
      await until(
        async () => (await holdersOn(live[2] as TestClient, lockName)) === 0,
        `the release reached server 2 (server 2's calls: ${server2.calls})`,
        5_000,
      );
    } finally {
      await gated.close();
    }
  });

  test("an attempt answered NOSCRIPT after the same token's release went out is not sent again as EVAL", async () => {
    // Server 2 does not have the acquire script (restarted empty), but has the release script
    // (another client loaded it there since). The call's attempt reaches it as EVALSHA, and its
    // NOSCRIPT answer is slow to come back (the server was down, a busy machine): the lease holds
    // on servers 0 and 1 meanwhile and is released; that release waits for the attempt a bounded
    // time only (QuorumNodes.inOrder) and runs on server 2 first, finding nothing. The attempt's
    // EVAL, sent when its NOSCRIPT answer came, then took a permit there that nobody holds: it
    // lived out its TTL (the fault suite's key-left-behind, "a minority restarted empty after a
    // TTL down" [RedlockSemaphore]).
    const lockName = name();
    await live[2]?.command('SCRIPT', 'FLUSH');
    for (const script of Object.values(scripts)) {
      if (script !== scripts.semaphoreAcquire) await live[2]?.command('SCRIPT', 'LOAD', script.source);
    }
    const gated = await ioredisKind.create((servers[2] as RedisServer).url);
    const semaphoreScripts = { acquire: scripts.semaphoreAcquire, release: scripts.semaphoreRelease };
    const server2 = lateNoScript(gated.client, semaphoreScripts, 800);
    try {
      // The release waits for the attempt at most a third of the TTL (500 ms), before its answer.
      const semaphore = new RedlockSemaphore(
        [live[0]?.client, live[1]?.client, gated.client] as TestClient['client'][],
        lockName,
        { limit: 1, ttlMs: 1_500, autoExtend: false },
      );
      const lease = await semaphore.acquire({ timeoutMs: 1_000 });
      assert.equal(await lease.release(), true);
      await server2.answered();
      await sleep(200);
      assert.equal(
        await holdersOn(live[2] as TestClient, lockName),
        0,
        `no permit left on server 2 (server 2's calls: ${server2.calls})`,
      );
    } finally {
      await gated.close();
    }
  });

  test("an attempt that reaches a server after the same token's release takes no permit there", async () => {
    // Issue 39, cause 2: a client re-sent the call's attempt and its release to server 2 after a
    // reset connection, the release ahead of the attempt. Here server 2's client holds the attempt
    // back until the release was answered, then sends it. The lease holds on servers 0 and 1 and is
    // released; its release, run on server 2 first, finds nothing there; the attempt then took a
    // permit for a token nobody holds, until its TTL (the fault suite's key-left-behind).
    const lockName = name();
    for (const script of Object.values(scripts)) await live[2]?.command('SCRIPT', 'LOAD', script.source);
    const gated = await ioredisKind.create((servers[2] as RedisServer).url);
    const semaphoreScripts = { acquire: scripts.semaphoreAcquire, release: scripts.semaphoreRelease };
    const server2 = attemptAfterRelease(gated.client, semaphoreScripts);
    try {
      const semaphore = new RedlockSemaphore(
        [live[0]?.client, live[1]?.client, gated.client] as TestClient['client'][],
        lockName,
        { limit: 1, ttlMs: 3_000, nodeTimeoutMs: 200, autoExtend: false },
      );
      const lease = await semaphore.acquire({ timeoutMs: 2_000 });
      assert.equal(await lease.release(), true);
      await server2.sent();
      assert.deepEqual(server2.calls, ['acquire 1', 'release 1'], 'the attempt was held back');
      for (const [i, client] of live.entries()) {
        assert.equal(
          await holdersOn(client, lockName),
          0,
          `no permit left on server ${i} (server 2's calls, sent in that order: release, then attempt)`,
        );
        assert.equal(await queuedOn(client, lockName), 0, `nobody queued on server ${i}`);
        // Kept a minute, not the 3 s TTL.
        const keptMs = await tombstoneKeptMs(client, PREFIX, lockName, lease.token);
        assert.ok(keptMs > 30_000, `server ${i} keeps the release's tombstone a minute (${keptMs} ms left)`);
      }
    } finally {
      await gated.close();
    }
  });

  test("an attempt held back behind the same token's hung call, then overtaken by its release, takes no permit", async () => {
    // The RedlockMutex's test of the same name, over permits. Server 2 applies the call's first
    // attempt (it queues there: another lease holds the only permit) but never answers it. That
    // lease is not released: its permit expires, so the call tries again on every server. Its
    // second attempt waits on server 2 behind the hung first (QuorumNodes.inOrder) while servers 0
    // and 1 grant it; the lease is released before that attempt reaches server 2, where it must
    // then take nothing (the release's tombstone), not a permit nobody holds until its TTL.
    const lockName = name();
    for (const script of Object.values(scripts)) await live[2]?.command('SCRIPT', 'LOAD', script.source);
    const gated = await ioredisKind.create((servers[2] as RedisServer).url);
    const semaphoreScripts = { acquire: scripts.semaphoreAcquire, release: scripts.semaphoreRelease };
    const server2 = attemptAfterRelease(gated.client, semaphoreScripts, { behindHung: true });
    try {
      const options = { limit: 1, ttlMs: 1_000, nodeTimeoutMs: 200, autoExtend: false };
      const first = await new RedlockSemaphore(clients(), lockName, options).acquire();
      const semaphore = new RedlockSemaphore(
        [live[0]?.client, live[1]?.client, gated.client] as TestClient['client'][],
        lockName,
        options,
      );
      const acquiring = semaphore.acquire({ timeoutMs: 5_000 });
      await until(() => server2.acquires() === 1, 'the first attempt reached server 2');
      const lease = await acquiring;
      assert.equal(await lease.release(), true);
      await server2.sent();
      const { calls } = server2;
      assert.ok(calls.indexOf('acquire 2') < calls.indexOf('release 1'), `made before the release: ${calls}`);
      // Each holder's member ends with its token. The first lease's may still be there: it expires
      // by itself, a few ms later on a server that granted it later (seen under load on server 2).
      // Servers 0 and 1 are not this test's: their releases may still be on their way (the next
      // test).
      const left = (await membersOn(live[2] as TestClient, lockName)).filter(
        (member) => !member.endsWith(first.token),
      );
      const said = `first ${first.token}, lease ${lease.token} after ${lease.attempts} attempt(s)`;
      assert.deepEqual(
        left,
        [],
        `no permit left on server 2 but the expiring first lease's (its calls, run in this order: release, then attempt 2; ${said})`,
      );
    } finally {
      await gated.close();
    }
  });

  test('a release reaches a server whose attempt of the same call answered late, after that attempt', async () => {
    // release() answers once a quorum released. Server 0's reply to the call's attempt comes back
    // 300 ms late (a busy machine): the call holds through servers 1 and 2, and is released before
    // that reply came. Server 0 granted the attempt meanwhile; the release goes out there once the
    // attempt settled (QuorumNodes.inOrder), and must take that permit back, not leave it for its
    // TTL (found as "a permit left on server 0" by a test that read the servers right after
    // release() returned).
    const lockName = name();
    for (const script of Object.values(scripts)) await live[0]?.command('SCRIPT', 'LOAD', script.source);
    const late = await ioredisKind.create((servers[0] as RedisServer).url);
    const semaphoreScripts = { acquire: scripts.semaphoreAcquire, release: scripts.semaphoreRelease };
    let answered = () => {};
    const server0Answered = new Promise<void>((resolve) => {
      answered = resolve;
    });
    interceptScripts(late.client, semaphoreScripts, (script, _count, send) =>
      script === 'acquire'
        ? send().then(async (reply) => {
            await sleep(300);
            answered();
            return reply;
          })
        : send(),
    );
    try {
      const semaphore = new RedlockSemaphore(
        [late.client, live[1]?.client, live[2]?.client] as TestClient['client'][],
        lockName,
        { limit: 3, ttlMs: 30_000, nodeTimeoutMs: 200, autoExtend: false },
      );
      const lease = await semaphore.acquire();
      const permitsOnServer0 = async () =>
        (await membersOn(live[0] as TestClient, lockName)).filter((member) => member.endsWith(lease.token))
          .length;
      await until(async () => (await permitsOnServer0()) === 1, 'server 0 granted the attempt');
      assert.equal(await lease.release(), true);
      await server0Answered;
      // Its permit lives 30 s: one left behind outlives this wait.
      await until(
        async () => (await permitsOnServer0()) === 0,
        "the release took server 0's permit back",
        10_000,
      );
      for (const client of live) assert.equal(await holdersOn(client, lockName), 0);
    } finally {
      await late.close();
    }
  });

  test("a release keeps its tombstone the call's TTL when that is over a minute", async () => {
    const lockName = name();
    const semaphore = new RedlockSemaphore(clients(), lockName, {
      limit: 1,
      ttlMs: 3_000,
      autoExtend: false,
    });
    const lease = await semaphore.acquire({ ttlMs: 120_000 });
    assert.equal(await lease.release(), true);
    for (const [i, client] of live.entries()) {
      const keptMs = await tombstoneKeptMsOnceReleased(client, PREFIX, lockName, lease.token);
      assert.ok(keptMs > 90_000, `server ${i} keeps it the call's 120 s (${keptMs} ms left)`);
    }
  });

  test('two waiters that reach the servers in different orders are handed the permit in the order of their places', async () => {
    // A joins first (its place is earlier), but its first attempt reaches servers 1 and 2 after
    // B's: in arrival order, server 0 would hand the released permit to A and servers 1 and 2 to B.
    // Ordered by places, every server hands it to A, and B waits for A's release.
    const lockName = name();
    const options = { limit: 1, ttlMs: 60_000, nodeTimeoutMs: 30_000 };
    const holder = new RedlockSemaphore(clients(), lockName, options);
    const held = await holder.acquire();
    const own = await Promise.all(servers.map((s) => ioredisKind.create(s.url)));
    try {
      // A's first attempt reaches servers 1 and 2 only once B is queued there.
      let openGate = () => {};
      const gate = new Promise<void>((resolve) => {
        openGate = resolve;
      });
      const semaphoreScripts = { acquire: scripts.semaphoreAcquire, release: scripts.semaphoreRelease };
      for (const node of [1, 2])
        interceptScripts(own[node]?.client, semaphoreScripts, (script, count, send) =>
          script === 'acquire' && count === 1 ? gate.then(send) : send(),
        );
      const a = new RedlockSemaphore(
        own.map((c) => c.client),
        lockName,
        options,
      );
      const b = new RedlockSemaphore(clients(), lockName, options);
      const placeA = Date.now();
      const waitingA = a.acquire({ timeoutMs: 60_000 });
      // B's place is a later millisecond than A's (a tie would be ordered by token).
      await until(
        async () => Date.now() > placeA && (await queuedOn(live[0] as TestClient, lockName)) === 1,
        'A queued on server 0',
      );
      const waitingB = b.acquire({ timeoutMs: 60_000 });
      await until(async () => {
        const queued = await Promise.all([1, 2].map((i) => queuedOn(live[i] as TestClient, lockName)));
        return queued.every((n) => n === 1);
      }, 'B queued on servers 1 and 2 before A');
      openGate();
      await queuedEverywhere(lockName, 2, 'both wait on every server');
      await held.release();
      const tagged = (waiting: Promise<Lease>, who: string) => waiting.then((lease) => ({ who, lease }));
      const first = await Promise.race([tagged(waitingA, 'A'), tagged(waitingB, 'B')]);
      await first.lease.release();
      await (await (first.who === 'A' ? waitingB : waitingA)).release();
      assert.equal(first.who, 'A', 'A, whose place is earlier, holds first');
      const { attempts } = first.lease;
      assert.ok(attempts <= 3, `A holds after ${attempts} attempts: handed the permit by every server`);
    } finally {
      await Promise.all(own.map((c) => c.close().catch(() => {})));
    }
  });

  test('a waiter is handed its permit by the release, not by polling', async () => {
    const lockName = name();
    const holder = new RedlockSemaphore(clients(), lockName, { limit: 1, ttlMs: 60_000 });
    const waiterSide = new RedlockSemaphore(clients(), lockName, {
      limit: 1,
      ttlMs: 60_000,
      retryDelayMs: 120_000,
    });
    const held: Lease = await holder.acquire();
    // Its deadline comes before the holder's TTL ends and it never asks again by itself: only the
    // release's hand-off can give it the permit in time.
    const waiting = waiterSide.acquire({ timeoutMs: 30_000 });
    await queuedEverywhere(lockName, 1, 'the waiter is queued on every server');
    await held.release();
    const lease = await waiting;
    // The first attempt queues it; the first server's hand-off wakes it, and it waits a node's
    // answer time for the others' (or they came together): at most three looks, none a poll.
    assert.ok(lease.attempts <= 3, `${lease.attempts} attempts: woken by the hand-offs`);
    assert.ok(lease.fencingToken > held.fencingToken);
    for (const c of live) assert.equal(await queuedOn(c, lockName), 0, 'it left every queue');
    await lease.release();
  });
});
