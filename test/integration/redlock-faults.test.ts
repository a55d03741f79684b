/**
 * RedlockMutex under faults, judged by the fault suite's checker (test/faults/toolkit/checker.ts):
 * four contenders, each with its own ioredis client per server, every server behind a fault proxy,
 * through phases of node faults. The history (invoke, ok, enter, exit, release) is the one the fault
 * suite's workers record, on the same monotonic clock, so the checker counts a holder from entering
 * its critical section until the first of leaving it, its signal aborting and its own validity.
 *
 * The fault suite (npm run test:faults) runs these faults too, as the `redlock-mutex` lock kind's
 * scenarios (test/faults/scenarios.ts, `redlockScenarios`), with worker processes on every client
 * kind; this file stays as the quick in-process check.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { type Lease, RedlockMutex } from '../../src/index.js';
import { lockKeys } from '../../src/protocol/keys.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { check } from '../faults/toolkit/checker.js';
import { type HistoryEvent, mono } from '../faults/toolkit/protocol.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';
import { watchUnhandledRejections } from '../fixtures/helpers.js';
import { ownerTokenOf } from '../fixtures/lock-value.js';

const NODES = 3;
const CONTENDERS = 4;
const TTL_MS = 1_000;
const PHASE_MS = 2_500;
/** `performance.now()` (the leases' clock) to `mono()`: both CLOCK_MONOTONIC, a fixed offset apart. */
const perfToMono = mono() - performance.now();

interface Phase {
  readonly name: string;
  /** Breaks something at the start of the phase; returns how to heal it at the end. */
  start(servers: readonly RedisServer[], proxies: readonly FaultProxy[]): () => void | Promise<void>;
}

const phases: readonly Phase[] = [
  { name: 'healthy', start: () => () => {} },
  {
    name: 'minority node lost (black-holed)',
    start: (_s, proxies) => {
      (proxies[0] as FaultProxy).blackhole();
      return () => (proxies[0] as FaultProxy).heal();
    },
  },
  {
    name: 'majority of nodes lost (black-holed)',
    start: (_s, proxies) => {
      (proxies[0] as FaultProxy).blackhole();
      (proxies[1] as FaultProxy).blackhole();
      return () => {
        (proxies[0] as FaultProxy).heal();
        (proxies[1] as FaultProxy).heal();
      };
    },
  },
  {
    name: 'a node paused past the TTL (SIGSTOP)',
    start: (servers) => {
      (servers[2] as RedisServer).pause();
      return () => (servers[2] as RedisServer).resume();
    },
  },
  {
    name: 'one node slower than the per-node timeout (proxy delay 80 ms)',
    start: (_s, proxies) => {
      (proxies[1] as FaultProxy).delay = 80;
      return () => {
        (proxies[1] as FaultProxy).delay = 0;
      };
    },
  },
  {
    name: 'lost replies on one node (10% of script replies swallowed)',
    start: (_s, proxies) => {
      const proxy = proxies[2] as FaultProxy;
      proxy.rule = (command) => (command.script && Math.random() < 0.1 ? 'swallow-reply' : 'forward');
      return () => {
        proxy.rule = undefined;
      };
    },
  },
];

describe('RedlockMutex under node faults (the fault suite checker)', () => {
  const servers: RedisServer[] = [];
  const proxies: FaultProxy[] = [];
  let unhandled: ReturnType<typeof watchUnhandledRejections>;
  before(async () => {
    for (let i = 0; i < NODES; i += 1) {
      const server = await startRedis();
      servers.push(server);
      proxies.push(await FaultProxy.start({ port: server.port }));
    }
    unhandled = watchUnhandledRejections();
  });
  after(async () => {
    unhandled.stop();
    for (const proxy of proxies) await proxy.close();
    await Promise.all(servers.map((s) => s.stop()));
  });

  test(`${phases.length} phases of ${PHASE_MS} ms, ${CONTENDERS} contenders on ${NODES} servers: 0 violations`, async (t) => {
    const name = `redlock-faults-${process.pid}`;
    const events: HistoryEvent[] = [];
    const clients = Array.from({ length: CONTENDERS }, () =>
      proxies.map((p) => {
        const client = new Redis(p.url, { maxRetriesPerRequest: null });
        client.on('error', () => {});
        return client;
      }),
    );
    let running = true;
    const contenders = clients.map(async (set, w) => {
      const lock = new RedlockMutex(set, name, { ttlMs: TTL_MS, nodeTimeoutMs: 50, timeoutMs: 2_000 });
      for (let seq = 0; running; seq += 1) {
        events.push({ ev: 'invoke', w, seq, lock: name, t: mono() });
        let lease: Lease;
        try {
          lease = await lock.acquire();
        } catch (error) {
          events.push({ ev: 'fail', w, seq, lock: name, t: mono(), error: String(error) });
          continue;
        }
        const okAt = mono();
        events.push({
          ev: 'ok',
          w,
          seq,
          lock: name,
          t: okAt,
          fence: lease.fencingToken,
          owner: lease.token,
          validUntil: lease.validUntil + perfToMono,
          signalAborted: lease.signal.aborted,
        });
        let lostAt: number | undefined;
        lease.signal.addEventListener('abort', () => (lostAt = mono()), { once: true });
        events.push({ ev: 'enter', w, seq, t: mono() });
        await new Promise((resolve) => setTimeout(resolve, 1 + Math.floor(Math.random() * 3)));
        events.push({
          ev: 'exit',
          w,
          seq,
          t: mono(),
          validUntil: lease.validUntil + perfToMono,
          lostAt,
          lostReason: lostAt === undefined ? undefined : 'lost',
          skippedWrite: false,
        });
        const result = await lease.release().then(
          (released) => (released ? ('released' as const) : ('not-held' as const)),
          () => 'error' as const,
        );
        events.push({ ev: 'release', w, seq, t: mono(), result });
      }
    });
    const perPhase: string[] = [];
    for (const phase of phases) {
      const before = events.filter((e) => e.ev === 'ok').length;
      const heal = phase.start(servers, proxies);
      await new Promise((resolve) => setTimeout(resolve, PHASE_MS));
      await heal();
      perPhase.push(`${phase.name}: ${events.filter((e) => e.ev === 'ok').length - before} acquisitions`);
      // The next phase starts from every node answering again.
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    running = false;
    await Promise.all(contenders);
    for (const set of clients) for (const client of set) client.disconnect();

    // Left behind: no lock key once every lease was released (and any late one expired).
    await new Promise((resolve) => setTimeout(resolve, TTL_MS + 200));
    const left: string[] = [];
    for (const server of servers) {
      // Gone, or holding only the release that freed it (holder.lua), which it keeps 60 s.
      const reply = await server.command('GET', lockKeys('locksmith', name).lock);
      const value = reply.startsWith('$-1') ? null : reply.split('\r\n')[1];
      if (ownerTokenOf(value) !== '') left.push(`${server.port}`);
    }
    const report = check(
      events,
      { reads: 0, writes: 0, fencedRejections: 0, staleAccepted: 0, lostUpdates: 0 },
      { leftAtStop: left, renewedAfterEnd: [], withoutExpiry: [] },
    );
    for (const line of perPhase) t.diagnostic(line);
    t.diagnostic(
      `${report.acquisitions} acquisitions, ${report.totalViolations} violations, ${report.lostLeases} leases lost, failures ${JSON.stringify(report.failures)}`,
    );
    assert.equal(report.totalViolations, 0, report.examples.join('\n'));
    assert.ok(report.acquisitions > 100, `made progress (${report.acquisitions})`);
    for (const line of perPhase.filter((l) => !l.startsWith('majority'))) {
      assert.doesNotMatch(line, /: 0 acquisitions/, `progress in every phase a quorum survives: ${line}`);
    }
    assert.deepEqual(unhandled.reasons, [], 'no unhandled rejections');
  });
});
