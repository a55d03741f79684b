/**
 * Runs one scenario: a fresh redis-server (and proxy) per node of the lock kind (one, or three for
 * Redlock), or a fresh Redis Cluster for a cluster scenario, the worker pool taking locks while the
 * scenario's faults run, then a healthy tail, a clean stop, the end-of-run key checks, and the
 * checker's verdict.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis as IORedis } from 'ioredis';
import { type RedisServer, startRedis } from '../../../tools/redis-server.js';
import {
  type ClientKind,
  type ClusterClientKind,
  clientKinds,
  clusterClientKinds,
  ioredisClusterTaggedPrefixKinds,
  TAGGED_KEY_PREFIX,
} from '../../fixtures/clients.js';
import { lockKeyIsFree, ownerTokenOf } from '../../fixtures/lock-value.js';
import { type RedisCluster, startCluster } from '../../fixtures/redis-cluster.js';
import {
  type CheckReport,
  check,
  type FaultWindow,
  type KeyFindings,
  type OwnerSample,
  type ViolationKind,
} from './checker.js';
import { clientKindIndex } from './client-rotation.js';
import { explainLeftKeys } from './left-keys.js';
import { lockLimit, lockNodes } from './locks.js';
import {
  type HistoryEvent,
  type LockId,
  mono,
  type ResourceReply,
  type ResourceRequest,
  type WorkerConfig,
} from './protocol.js';
import { FaultProxy, type TracedCommand } from './proxy.js';
import { FencedResource } from './resource.js';
import type { WorkerHandle } from './workers.js';

export interface FaultContext {
  /** The lock kind the workers take in this run. */
  readonly lock: LockId;
  /** The redis-server (the first node, for a lock over several). */
  readonly server: RedisServer;
  /** Present when the scenario asked for one: the workers' clients connect through it. */
  readonly proxy: FaultProxy | undefined;
  /** Every node's redis-server, in node order (one for every lock but Redlock). */
  readonly servers: readonly RedisServer[];
  /** Every node's proxy, in node order, when the scenario asked for proxies (else empty). */
  readonly proxies: readonly FaultProxy[];
  /** The cluster of a cluster scenario (`servers` are then its nodes), else undefined. */
  readonly cluster: RedisCluster | undefined;
  /** The lock names the workers contend on. */
  readonly lockNames: readonly string[];
  readonly workers: readonly WorkerHandle[];
  /** The workers' events so far, as they arrived (a fault may aim at whoever holds a lock now). */
  readonly history: readonly HistoryEvent[];
  readonly ttlMs: number;
  /** Aborts when the fault phase is over: a fault loop must stop and heal what it broke. */
  readonly signal: AbortSignal;
  /** Counts of faults injected, printed with the figure and checked by `exercised`. */
  readonly counts: Record<string, number>;
  count(name: string, by?: number): void;
  /**
   * Opens a fault window (checker.ts, "Fault windows") named `name` now; the function it returns
   * closes it, one TTL after it is called (a lease granted before then may still be running). Inside
   * it, violations of the `tolerate` kinds do not fail the run; they and every other are reported.
   */
  openWindow(name: string, tolerate?: readonly ViolationKind[]): () => void;
  /** A line for the run's notes in the table (what a fault measured). */
  note(text: string): void;
  /** Sleeps, resolving early (never rejecting) when the fault phase ends. */
  wait(ms: number): Promise<void>;
}

export interface ScenarioRun {
  readonly lock: LockId;
  readonly durationMs: number;
  /**
   * The client kinds the workers use, by name (the runner's `--clients`), rotated among them:
   * a kind the scenario skips (`skipClients`) too. Undefined: every kind the scenario does not skip.
   */
  readonly clients?: readonly string[] | undefined;
}

/** A cluster scenario's deployment beyond the default: a password, a client key prefix. */
export interface ClusterSetup {
  /** Every node's `requirepass`: the workers, their probes and the key checks authenticate. */
  readonly requirepass?: string;
  /**
   * The workers lock with ioredis Clusters whose `keyPrefix` has a hash tag
   * (`ioredisClusterTaggedPrefixKinds`, `TAGGED_KEY_PREFIX`): every key of every lock hashes to that
   * tag's slot, while each lock's name still picks its channel's.
   */
  readonly taggedKeyPrefix?: boolean;
}

export interface Scenario {
  readonly name: string;
  /** 'safe': must show zero violations. 'flagged': a negative control, must show some. */
  readonly expect: 'safe' | 'flagged';
  /** Which locks it runs for: the real primitives by default, or one fixed kind (controls). */
  readonly locks?: readonly LockId[];
  readonly redis?: { appendOnly?: boolean };
  /** A proxy in front of each redis-server (every node of a Redlock). */
  readonly proxy?: boolean;
  /**
   * Runs on a Redis Cluster (test/fixtures/redis-cluster.ts: 3 primaries with a replica each)
   * instead of one redis-server: the workers lock with cluster clients (rotated over
   * `clusterClientKinds`), `lockCount` names spread evenly over the primaries, and the end-of-run
   * key checks ask every primary. No proxy, no orphan sampling.
   */
  readonly cluster?: boolean | ClusterSetup;
  /**
   * The nodes the scenario is written for: it runs only for lock kinds on that many servers
   * (`lockNodes`; default 1), so Redlock runs its own scenarios and none of the one-server ones.
   */
  readonly nodes?: number;
  /**
   * Whether it needs an exclusive lock (it exercises fencing of the single register the holders
   * write): lock kinds that admit several holders (a Semaphore) skip it.
   */
  readonly exclusive?: boolean;
  /** Whether the resource refuses stale fencing tokens (default true). */
  readonly fenced?: boolean;
  readonly workers?: number;
  /**
   * Its fault phase in the fast profile when shorter than the profile's (`--scenario-ms`): scenarios
   * added to a suite that runs in CI keep its total time in check this way.
   */
  readonly phaseMs?: number;
  /**
   * The shortest fault phase in which its fault happens as often as `exercised` asks, on a busy
   * machine: the fast profile's phase is stretched to it (`--scenario-ms` sets the rest).
   */
  readonly minPhaseMs?: number;
  /** How many lock names the workers spread over (default 2): more means more acquisitions per second. */
  readonly lockCount?: number;
  /** Worker settings over the defaults; a function gives each worker its own. */
  readonly config?: Partial<WorkerConfig> | ((index: number) => Partial<WorkerConfig>);
  /** The fault loop; runs during the fault phase and must heal before it resolves. */
  fault?(ctx: FaultContext): Promise<void>;
  /** Sees every resource access before it is served (e.g. to pause the accessing worker). */
  onResource?(ctx: FaultContext, worker: WorkerHandle, request: ResourceRequest): void;
  /** Proof the fault happened: a message when it did not (the figure would then prove nothing). */
  exercised?(ctx: FaultContext, report: CheckReport): string | undefined;
  /**
   * Sample who holds each lock during the run and flag owner tokens no worker was granted that stay
   * longer than half the TTL (attempts given up on without giving their token back).
   */
  readonly checkOrphans?: boolean;
  /**
   * Flag a lock left free for longer than half the TTL while a worker's call waited for it
   * (`idle-while-queued`, a liveness finding of checker.ts).
   */
  readonly checkIdle?: boolean;
  /**
   * Violation kinds this scenario's deployment cannot prevent and documents (e.g. two holders after
   * a restart without persistence): counted and printed, but not a failure. Every other kind is.
   */
  readonly tolerate?: readonly ViolationKind[];
  /**
   * Client kinds this scenario's workers never use, each with why: a client library's own defect
   * that Locksmith cannot work around, named in docs/guarantees.md as open. Every other kind
   * still takes its turn.
   */
  readonly skipClients?: Readonly<Record<string, string>>;
}

export interface ScenarioResult {
  readonly scenario: string;
  readonly lock: LockId;
  /** Whether it ran on a Redis Cluster (`Scenario.cluster`). */
  readonly cluster: boolean;
  readonly expect: 'safe' | 'flagged';
  readonly report: CheckReport;
  readonly counts: Readonly<Record<string, number>>;
  readonly notExercised: string | undefined;
  /** Violations of the kinds the scenario tolerates (see `Scenario.tolerate`), or a window does. */
  readonly tolerated: number;
  /** What the scenario's faults noted (`FaultContext.note`). */
  readonly notes: readonly string[];
  /**
   * What the run found out about each key left behind (left-keys.ts: its holders per node, that
   * token's events and script calls), printed under the run's line. Empty when none was left.
   */
  readonly leftKeys: readonly string[];
  readonly passed: boolean;
  readonly seconds: number;
}

/**
 * Known defects a lock kind still has, named in docs/guarantees.md as open: counted and printed as
 * tolerated in every scenario of that kind, not a failure, until they are fixed. None now: the
 * RedlockSemaphore's permit left behind (issue 39) was fixed, each path with its test (an attempt
 * re-sent by ioredis after its release ran, refused by the release's tombstone; a release that
 * found its token the last releaser now leaves the queue; a hand-off after the last holder left
 * sets the key's expiry).
 */
const OPEN_DEFECTS: Partial<Record<LockId, readonly ViolationKind[]>> = {};

/** The violations a run forgives: the scenario's kinds anywhere, each window's kinds inside it. */
export function toleratedViolations(scenario: Scenario, report: CheckReport, lock?: LockId): number {
  const everywhere = new Set<ViolationKind>([
    ...(scenario.tolerate ?? []),
    ...((lock ? OPEN_DEFECTS[lock] : undefined) ?? []),
  ]);
  let tolerated = [...everywhere].reduce((n, kind) => n + report.violations[kind], 0);
  for (const window of report.windows) {
    for (const kind of window.tolerate) if (!everywhere.has(kind)) tolerated += window.violations[kind];
  }
  return tolerated;
}

/** A lock's main key, with the tagged key prefix or without (a `ClusterSetup.taggedKeyPrefix` run). */
const LOCK_KEY = new RegExp(`^(?:${TAGGED_KEY_PREFIX.replace(/[{}]/g, '\\$&')})?locksmith:\\{[^}]*\\}$`);

export const defaultConfig: Omit<
  WorkerConfig,
  'scenario' | 'clientKind' | 'redisUrl' | 'probeUrl' | 'lock' | 'lockNames'
> = {
  ttlMs: 500,
  autoExtend: true,
  acquireTimeoutMs: 3_000,
  workMs: [0, 3],
  thinkMs: [0, 2],
  honorSignal: true,
  probe: true,
};

/** Scenario runs so far in this process: each run rotates the workers' client kinds. */
let runNumber = 0;

export async function runScenario(
  scenario: Scenario,
  run: ScenarioRun,
  pool: readonly WorkerHandle[],
): Promise<ScenarioResult> {
  const started = performance.now();
  const thisRun = runNumber++;
  const servers: RedisServer[] = [];
  const proxies: FaultProxy[] = [];
  const admins: IORedis[] = [];
  if (scenario.cluster && (scenario.proxy || scenario.checkOrphans || lockNodes(run.lock) !== 1))
    throw new Error(
      `${scenario.name}: a cluster scenario has no proxy, no orphan sampling, one lock deployment`,
    );
  let cluster: RedisCluster | undefined;
  const setup: ClusterSetup = typeof scenario.cluster === 'object' ? scenario.cluster : {};
  try {
    if (scenario.cluster) {
      cluster = await startCluster({ requirepass: setup.requirepass });
      servers.push(...cluster.nodes);
    }
    for (let i = 0; i < (scenario.cluster ? 0 : lockNodes(run.lock)); i += 1) {
      const node = await startRedis({ appendOnly: scenario.redis?.appendOnly ?? false });
      servers.push(node);
      if (scenario.proxy) {
        const nodeProxy = await FaultProxy.start({ port: node.port });
        // A lock over several nodes: each node's script calls are traced, to explain a key left
        // behind (left-keys.ts).
        if (lockNodes(run.lock) > 1) nodeProxy.trace = [];
        proxies.push(nodeProxy);
      }
      const nodeAdmin = new IORedis(node.url, { maxRetriesPerRequest: null });
      nodeAdmin.on('error', () => {});
      admins.push(nodeAdmin);
    }
  } catch (error) {
    for (const nodeAdmin of admins) nodeAdmin.disconnect();
    for (const nodeProxy of proxies) await nodeProxy.close();
    await Promise.all(servers.map((node) => node.stop()));
    throw error;
  }
  const server = servers[0] as RedisServer;
  const proxy = proxies[0];
  const admin = admins[0];
  const workers = pool.slice(0, scenario.workers ?? pool.length);
  const resource = new FencedResource(scenario.fenced ?? true);
  const events: HistoryEvent[] = [];
  const phase = new AbortController();
  const counts: Record<string, number> = {};
  const windows: FaultWindow[] = [];
  const notes: string[] = [];
  const lockNames = cluster
    ? await namesOnEveryPrimary(cluster, scenario.name, scenario.lockCount ?? 2).catch(async (error) => {
        await cluster?.stop();
        throw error;
      })
    : Array.from({ length: scenario.lockCount ?? 2 }, (_, i) => `${scenario.name}-${i}`);
  const ctx: FaultContext = {
    lock: run.lock,
    server,
    proxy,
    servers,
    proxies,
    cluster,
    lockNames,
    workers,
    history: events,
    ttlMs: 0,
    signal: phase.signal,
    counts,
    count: (name, by = 1) => {
      counts[name] = (counts[name] ?? 0) + by;
    },
    openWindow: (name, tolerate = []) => {
      const from = mono();
      return () => {
        windows.push({ name, from, to: mono() + ctx.ttlMs, tolerate });
      };
    },
    note: (text) => {
      notes.push(text);
    },
    wait: (ms) =>
      Number.isFinite(ms)
        ? sleep(ms, undefined, { signal: phase.signal }).catch(() => {})
        : new Promise<void>((resolve) =>
            phase.signal.addEventListener('abort', () => resolve(), { once: true }),
          ),
  };
  const kinds: readonly (ClientKind | ClusterClientKind)[] = !cluster
    ? clientKinds
    : setup.taggedKeyPrefix
      ? ioredisClusterTaggedPrefixKinds
      : clusterClientKinds;
  const asked = run.clients;
  const usable = asked
    ? kinds.filter((kind) => asked.includes(kind.name))
    : kinds.filter((kind) => scenario.skipClients?.[kind.name] === undefined);
  if (usable.length === 0)
    throw new Error(
      `${scenario.name}: none of the client kinds ${JSON.stringify(asked)} exists here; the kinds: ${kinds.map((kind) => kind.name).join(', ')}`,
    );
  const kindOf = (worker: WorkerHandle) =>
    (usable[clientKindIndex(worker.index, thisRun, pool.length, usable.length)] as ClientKind).name;
  // Each worker comes in to each proxy by an entrance of its own, labelled with the worker and its
  // client kind: a traced call then names the client library that sent it (left-keys.ts).
  const entrances = await Promise.all(
    workers.map((worker) =>
      Promise.all(proxies.map((nodeProxy) => nodeProxy.entrance(`w${worker.index} ${kindOf(worker)}`))),
    ),
  );
  const configs = workers.map((worker, w): WorkerConfig => {
    const extra = typeof scenario.config === 'function' ? scenario.config(worker.index) : scenario.config;
    const urls = entrances[w] as string[];
    return {
      ...defaultConfig,
      ...extra,
      scenario: scenario.name,
      clientKind: kindOf(worker),
      redisUrl: urls[0] ?? server.url,
      probeUrl: server.url,
      ...(cluster
        ? {
            cluster: {
              startupNodes: cluster.startupNodes,
              ...(cluster.password === undefined ? {} : { password: cluster.password }),
              ...(setup.taggedKeyPrefix ? { keyPrefix: TAGGED_KEY_PREFIX } : {}),
            },
          }
        : {}),
      ...(servers.length > 1
        ? {
            redisUrls: servers.map((node, i) => urls[i] ?? node.url),
            probeUrls: servers.map((node) => node.url),
          }
        : {}),
      lock: run.lock,
      lockNames,
    };
  });
  const ttlMs = Math.max(...configs.map((c) => c.ttlMs));
  (ctx as { ttlMs: number }).ttlMs = ttlMs;

  let closed = false;
  try {
    const hooks = {
      onEvents: (batch: HistoryEvent[]) => {
        for (const event of batch) events.push(event);
      },
      onResource: (worker: WorkerHandle, request: ResourceRequest): ResourceReply => {
        const reply = resource.handle(request);
        scenario.onResource?.(ctx, worker, request);
        return reply;
      },
    };
    await Promise.all(workers.map((worker, i) => worker.start(configs[i] as WorkerConfig, hooks)));

    const sampling = new AbortController();
    const ownerSamples: OwnerSample[] = [];
    const sampled =
      scenario.checkOrphans && admin
        ? sampleOwners(admin, lockNames, lockLimit(run.lock), ownerSamples, sampling.signal)
        : Promise.resolve();
    const faults = scenario.fault?.(ctx) ?? Promise.resolve();
    await sleep(run.durationMs);
    phase.abort();
    await faults;

    // Heal whatever a fault loop may have left (defensive: each loop heals its own), then a
    // healthy tail longer than the TTL, so every lease from the faulty phase has ended one way or
    // the other before the end-of-run checks.
    for (const node of servers) node.resume();
    for (const worker of workers) worker.resume();
    for (const nodeProxy of proxies) {
      nodeProxy.rule = undefined;
      nodeProxy.delay = 0;
      nodeProxy.heal();
    }
    await sleep(ttlMs + 500);
    await Promise.all(workers.map((worker) => worker.stop()));
    sampling.abort();
    await sampled;

    // Every worker has released by now and sits idle with its client open, so anything that still
    // holds or renews a lock is a leak.
    // On every node of a Redlock (its keys named `node <i>: <key>`), every primary of a cluster.
    if (cluster) {
      admins.push(...(await primaryAdmins(cluster)));
      const shards = cluster.nodes.length / 2;
      if (admins.length !== shards)
        throw new Error(`the key checks found ${admins.length} primaries, not ${shards}`);
    }
    await sleep(300);
    const leftAtStop = await onEveryNode(admins, lockKeys);
    const withoutExpiry = await onEveryNode(admins, keysWithoutExpiry);
    // Read before the wait below: a key left behind lives out its TTL meanwhile.
    const leftKeys =
      leftAtStop.length > 0
        ? await explainLeftKeys(
            leftAtStop,
            admins,
            events,
            proxies.map((nodeProxy): readonly TracedCommand[] => nodeProxy.trace ?? []),
          )
        : [];
    // A key renewed after the end is one left at stop that is still there two TTLs later: with none
    // left at stop there is nothing that could be renewed, and nothing to wait for.
    if (leftAtStop.length > 0) await sleep(2 * ttlMs);
    const renewedAfterEnd =
      leftAtStop.length > 0
        ? (await onEveryNode(admins, lockKeys)).filter((key) => leftAtStop.includes(key))
        : [];
    const keys: KeyFindings = {
      leftAtStop,
      renewedAfterEnd,
      withoutExpiry,
      ...(scenario.checkOrphans ? { ownerSamples, orphanGraceMs: ttlMs / 2 } : {}),
    };
    await Promise.all(workers.map((worker) => worker.close()));
    closed = true;

    const liveness = scenario.checkIdle ? { idleBoundMs: ttlMs / 2 } : {};
    const report = check(events, resource.stats, keys, lockLimit(run.lock), windows, liveness);
    const notExercised = scenario.exercised?.(ctx, report);
    const tolerated = toleratedViolations(scenario, report, run.lock);
    const flagged = report.totalViolations - tolerated > 0;
    const passed = scenario.expect === 'safe' ? !flagged && notExercised === undefined : flagged;
    return {
      scenario: scenario.name,
      lock: run.lock,
      cluster: cluster !== undefined,
      expect: scenario.expect,
      report,
      counts,
      notExercised,
      tolerated,
      notes,
      leftKeys,
      passed,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    phase.abort();
    if (!closed) {
      // A scenario that failed half-way: leave the pool ready for the next one, as far as possible.
      for (const node of servers) node.resume();
      await Promise.allSettled(
        workers.map(async (worker) => {
          await worker.stop();
          await worker.close();
        }),
      );
    }
    for (const nodeAdmin of admins) nodeAdmin.disconnect();
    for (const nodeProxy of proxies) await nodeProxy.close();
    if (cluster) await cluster.stop();
    else await Promise.all(servers.map((node) => node.stop()));
  }
}

/**
 * `count` lock names `stem-<i>` spread evenly over the cluster's primaries (by the slot of each
 * name's lock key), so that contention, and a failover, reach every shard.
 */
async function namesOnEveryPrimary(cluster: RedisCluster, stem: string, count: number): Promise<string[]> {
  const primaries = await cluster.primaries();
  const perPrimary = Math.ceil(count / primaries.length);
  const taken = new Map<number, number>();
  const names: string[] = [];
  for (let i = 0; names.length < count && i < 10_000; i += 1) {
    const name = `${stem}-${i}`;
    const { port } = await cluster.primaryFor(`locksmith:{${name}}`);
    if ((taken.get(port) ?? 0) >= perPrimary) continue;
    taken.set(port, (taken.get(port) ?? 0) + 1);
    names.push(name);
  }
  return names;
}

/** A direct connection to each primary of the cluster now (KEYS lists a node's own keys). */
async function primaryAdmins(cluster: RedisCluster): Promise<IORedis[]> {
  return (await cluster.primaries()).map((node) => {
    const nodeAdmin = new IORedis(node.url, {
      maxRetriesPerRequest: null,
      ...(cluster.password === undefined ? {} : { password: cluster.password }),
    });
    nodeAdmin.on('error', () => {});
    return nodeAdmin;
  });
}

/** A key check run on each node; with several nodes, each key is named after its node. */
async function onEveryNode(admins: readonly IORedis[], read: (admin: IORedis) => Promise<string[]>) {
  const perNode = await Promise.all(admins.map(read));
  if (perNode.length === 1) return perNode[0] as string[];
  return perNode.flatMap((keys, i) => keys.map((key) => `node ${i}: ${key}`));
}

/** The lock keys that hold a holder (not those a release left behind for 60 s, holder.lua). */
async function lockKeys(admin: IORedis): Promise<string[]> {
  const held: string[] = [];
  for (const key of (await admin.keys('*locksmith:*')).filter((k) => LOCK_KEY.test(k)).sort()) {
    if (!(await lockKeyIsFree({ command: (...args) => admin.call(...(args as [string])) }, key)))
      held.push(key);
  }
  return held;
}

async function keysWithoutExpiry(admin: IORedis): Promise<string[]> {
  const found: string[] = [];
  for (const key of await admin.keys('*')) {
    // Fencing counters never expire, by design: tokens must only grow.
    if (key.endsWith(':fence')) continue;
    if ((await admin.pttl(key)) === -1) found.push(key);
  }
  return found;
}

/**
 * Reads who holds each lock every ~20 ms on the admin connection (direct, so faults do not hide
 * it) until `signal` aborts. A sample that fails (Redis paused or down) is simply skipped.
 */
async function sampleOwners(
  admin: IORedis,
  lockNames: readonly string[],
  limit: number,
  samples: OwnerSample[],
  signal: AbortSignal,
): Promise<void> {
  const keys = lockNames.map((name) => `locksmith:{${name}}`);
  // A lock key holds its owner; a semaphore's holds every live holder (read by the server's clock).
  const read = async (): Promise<[number, string][]> =>
    limit > 1
      ? pairs((await admin.eval(SEMAPHORE_OWNERS, keys.length, ...keys)) as (number | string)[])
      : (await admin.mget(...keys)).flatMap((value, i): [number, string][] => {
          // No key, or the release a release leaves there for 60 s: nobody owns it.
          const owner = ownerTokenOf(value);
          return owner === '' ? [] : [[i, owner]];
        });
  while (!signal.aborted) {
    try {
      // Stamped when sent (on the workers' clock): a sample sent after a give-back's reply arrived
      // that still shows the token means the give-back did not free the lock.
      const t = mono();
      const owners = await Promise.race([read(), sleep(200).then(() => undefined)]);
      for (const [i, owner] of owners ?? []) samples.push({ lock: lockNames[i] as string, owner, t });
    } catch {
      // Redis paused, killed or restarting: nothing learned this time.
    }
    await sleep(20, undefined, { signal }).catch(() => {});
  }
}

/** Every live holder of the semaphores at KEYS, as {key index (0-based), owner token, ...}. */
const SEMAPHORE_OWNERS = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local members = redis.pcall('zrangebyscore', key, '(' .. now, '+inf')
  if not members.err then
    for _, member in ipairs(members) do
      out[#out + 1] = i - 1
      -- "<permits>|<fence>|<#label>|<label><token>" (semaphore-holders.lua)
      local label_len, rest = string.match(member, '^%d+|%d+|(%d+)|(.*)$')
      out[#out + 1] = string.sub(rest, tonumber(label_len) + 1)
    end
  end
end
return out`;

function pairs(flat: readonly (number | string)[]): [number, string][] {
  const result: [number, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) result.push([Number(flat[i]), String(flat[i + 1])]);
  return result;
}

/** Runs `step` every [min, max] ms until the fault phase ends. */
export async function every(
  ctx: FaultContext,
  [min, max]: readonly [number, number],
  step: () => Promise<void> | void,
): Promise<void> {
  while (!ctx.signal.aborted) {
    await ctx.wait(min + Math.random() * (max - min));
    if (ctx.signal.aborted) break;
    await step();
  }
}
