/**
 * A worker process of the fault suite: takes locks in a loop, and inside each critical section
 * does a read-modify-write at the parent's fenced resource, logging every step for the checker.
 *
 * Started by workers.ts as `node --import tsx worker.ts <index>` with an IPC channel; it serves
 * one scenario after another (start → stop → close) so a suite pays for process start-up once.
 * It never exits on its own: a lost lock, a Redis error, anything, is an event, never a crash (a
 * crash, an unhandled rejection, is itself reported and counted as a violation).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis as IORedis } from 'ioredis';
import { subscribeLockEvents } from '../../../src/events.js';
import {
  clientKinds,
  clusterClientKinds,
  ioredisClusterTaggedPrefixKinds,
  type TestClient,
} from '../../fixtures/clients.js';
import { ownerTokenOf } from '../../fixtures/lock-value.js';
import type { HeldLock, LockAdapter, NodeClients } from './held-lock.js';
import { lockAdapter, lockLimit } from './locks.js';
import {
  type FromWorker,
  type HistoryEvent,
  mono,
  type ResourceReply,
  type ResourceRequest,
  type ToWorker,
  type WorkerConfig,
} from './protocol.js';

const index = Number(process.argv[2] ?? 0);

/** Why a call that gave up after a give-back (`giveUpAfterGiveBackMs`) was aborted: checker.ts' 'aborted'. */
const GAVE_UP = 'gave up after a give-back';

/** The lock key's value and its PTTL, read atomically. */
const PROBE_SCRIPT = "return {redis.call('get', KEYS[1]) or '', redis.call('pttl', KEYS[1])}";

function send(message: FromWorker): void {
  process.send?.(message);
}

// Events are batched per turn of the event loop: one IPC message carries several.
let buffered: HistoryEvent[] = [];
let flushScheduled = false;
function emit(event: HistoryEvent): void {
  buffered.push(event);
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(() => {
    flushScheduled = false;
    const events = buffered;
    buffered = [];
    send({ type: 'events', events });
  });
}

// Every give-back the library makes, with its token, so the checker can tell a key a caller gave up
// on but could not give back yet (its client reconnecting) from one nobody gave back at all.
/**
 * When the library handed each lease out (its `acquired` event, emitted right after its last
 * validity check), and how long after its call began (`waitMs`, read with that check), by lock name
 * and fencing token: with several callers in one process, the caller may run its first line
 * milliseconds later, and a grant is judged by when the library checked it.
 */
const handedOut = new Map<string, { readonly at: number; readonly waitMs: number }>();

subscribeLockEvents((event) => {
  if (event.type === 'acquired') {
    handedOut.set(`${event.lockName}|${event.fencingToken}`, { at: mono(), waitMs: event.waitMs });
    return;
  }
  if (event.type !== 'give-back') return;
  emit({ ev: 'give-back', w: index, t: mono(), token: event.token, released: event.released });
  if (event.released) for (const giveUp of onGrantGivenBack) giveUp();
});

/** The waiting calls that give up once a grant was given back (`giveUpAfterGiveBackMs`). */
const onGrantGivenBack = new Set<() => void>();

process.on('unhandledRejection', (reason) => {
  emit({ ev: 'crash', w: index, t: mono(), error: `unhandledRejection: ${describe(reason)}` });
});
process.on('uncaughtException', (error) => {
  emit({ ev: 'crash', w: index, t: mono(), error: `uncaughtException: ${describe(error)}` });
});

function describe(error: unknown): string {
  if (error instanceof Error)
    return `${error.name}${'code' in error ? `[${String(error.code)}]` : ''}: ${error.message}`;
  return String(error);
}

let nextRequest = 1;
const pendingRequests = new Map<number, (reply: ResourceReply) => void>();
function resource(request: ResourceRequest): Promise<ResourceReply> {
  const id = nextRequest++;
  return new Promise((resolve) => {
    pendingRequests.set(id, resolve);
    send({ type: 'resource', id, request });
  });
}

const between = ([min, max]: readonly [number, number]) => min + Math.random() * (max - min);

interface Run {
  readonly config: WorkerConfig;
  readonly stop: AbortController;
  client: TestClient | undefined;
  probe: Probe | undefined;
  /** A lock over several servers: the clients of the nodes after the first, and every node's probe. */
  moreClients: TestClient[];
  nodeProbes: IORedis[];
  done: Promise<void>;
}
/** A direct connection for the probes: to the server, or (a cluster scenario) to the cluster. */
type Probe = IORedis | Cluster;

let run: Run | undefined;
let seq = 0;

process.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'start':
      void start(message.config);
      break;
    case 'stop':
      void stop();
      break;
    case 'close':
      void close();
      break;
    case 'resource-reply': {
      const resolve = pendingRequests.get(message.id);
      pendingRequests.delete(message.id);
      resolve?.(message.reply);
      break;
    }
  }
});

async function start(config: WorkerConfig): Promise<void> {
  const current: Run = {
    config,
    stop: new AbortController(),
    client: undefined,
    probe: undefined,
    moreClients: [],
    nodeProbes: [],
    done: Promise.resolve(),
  };
  run = current;
  if (config.cluster) {
    const clusterKind = [...clusterClientKinds, ...ioredisClusterTaggedPrefixKinds].find(
      (candidate) => candidate.name === config.clientKind,
    );
    if (!clusterKind) throw new Error(`no cluster client kind named ${config.clientKind}`);
    current.client = await clusterKind.create(config.cluster);
    if (config.probe) current.probe = await clusterProbe(config.cluster);
    startLoops(current);
    return;
  }
  const kind = clientKinds.find((candidate) => candidate.name === config.clientKind);
  if (!kind) throw new Error(`no client kind named ${config.clientKind}`);
  current.client = await kind.create(config.redisUrl);
  // Direct to Redis, bounded: a paused or dead server makes a probe fail, never hang the loop.
  const probeClient = (url: string) => {
    const probe = new IORedis(url, {
      commandTimeout: 500,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
    });
    probe.on('error', () => {});
    return probe;
  };
  if (config.probe) current.probe = probeClient(config.probeUrl);
  let nodes: NodeClients | undefined;
  if (config.redisUrls) {
    // One client per node, all of this run's kind (the first is `client`), and a probe per node.
    for (const url of config.redisUrls.slice(1)) current.moreClients.push(await kind.create(url));
    current.nodeProbes = (config.probeUrls ?? []).map(probeClient);
    nodes = {
      clients: [current.client, ...current.moreClients].map((c) => c.client),
      probes: current.nodeProbes,
    };
  }
  startLoops(current, nodes);
}

/**
 * Bounded like the one-server probe (a node down or between primaries makes a probe fail, never
 * hang the loop), and ready before the loops start.
 */
async function clusterProbe(cluster: NonNullable<WorkerConfig['cluster']>): Promise<Cluster> {
  const { startupNodes, password, keyPrefix } = cluster;
  const probe = new Cluster([...startupNodes], {
    enableOfflineQueue: false,
    ...(keyPrefix === undefined ? {} : { keyPrefix }),
    redisOptions: {
      commandTimeout: 500,
      maxRetriesPerRequest: 1,
      ...(password === undefined ? {} : { password }),
    },
  });
  probe.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    probe.once('ready', () => resolve());
    probe.once('end', () => reject(new Error('the probe cluster client could not connect')));
  });
  return probe;
}

/** Starts the run's acquire loops on its client, and tells the parent. */
function startLoops(current: Run, nodes?: NodeClients): void {
  const { config } = current;
  const { client, command } = current.client as TestClient;
  const adapters = new Map<string, LockAdapter>(
    config.lockNames.map((name) => [name, lockAdapter(config.lock, client, command, name, config, nodes)]),
  );
  // Several loops share the client and the lock objects, as concurrent callers of one process do.
  const loops = Math.max(1, config.loops ?? 1);
  current.done = Promise.all(Array.from({ length: loops }, (_, l) => loop(current, adapters, l))).then(
    () => {},
  );
  send({ type: 'started' });
}

async function stop(): Promise<void> {
  const current = run;
  if (!current) return;
  current.stop.abort(new Error('scenario stopped'));
  await current.done;
  // Flush before saying so, so every event of this scenario is in the parent's hands.
  send({ type: 'events', events: buffered });
  buffered = [];
  send({ type: 'stopped' });
}

async function close(): Promise<void> {
  const current = run;
  run = undefined;
  if (current) {
    current.probe?.disconnect();
    for (const probe of current.nodeProbes) probe.disconnect();
    await current.client?.close().catch(() => {});
    await Promise.all(current.moreClients.map((c) => c.close().catch(() => {})));
  }
  send({ type: 'closed' });
}

/** One holder of the worker (`l`: which loop; its events say so when the worker runs several). */
async function loop(current: Run, adapters: Map<string, LockAdapter>, l: number): Promise<void> {
  const who = holderOf(current.config, l);
  const { config } = current;
  while (!current.stop.signal.aborted) {
    const lock = config.lockNames[Math.floor(Math.random() * config.lockNames.length)] as string;
    const adapter = adapters.get(lock) as LockAdapter;
    seq += 1;
    const id = seq;
    const invokedAt = mono();
    emit({ ev: 'invoke', ...who, seq: id, lock, t: invokedAt });
    let signal = current.stop.signal;
    let stormTimer: NodeJS.Timeout | undefined;
    if (config.abortAfterMs) {
      const storm = new AbortController();
      stormTimer = setTimeout(() => storm.abort(new Error('abort storm')), between(config.abortAfterMs));
      signal = AbortSignal.any([signal, storm.signal]);
    }
    let giveUp: (() => void) | undefined;
    let giveUpTimer: NodeJS.Timeout | undefined;
    const giveUpAfter = config.giveUpAfterGiveBackMs;
    if (giveUpAfter) {
      const gaveUp = new AbortController();
      giveUp = () => {
        if (giveUpTimer) return;
        emit({ ev: 'count', w: index, name: GAVE_UP });
        giveUpTimer = setTimeout(() => gaveUp.abort(new Error(GAVE_UP)), between(giveUpAfter));
      };
      onGrantGivenBack.add(giveUp);
      signal = AbortSignal.any([signal, gaveUp.signal]);
    }
    let held: HeldLock;
    try {
      held = await adapter.acquire(signal);
    } catch (error) {
      emit({ ev: 'fail', ...who, seq: id, lock, t: mono(), error: describe(error) });
      await pause(config.thinkMs, current);
      continue;
    } finally {
      clearTimeout(stormTimer);
      clearTimeout(giveUpTimer);
      if (giveUp) onGrantGivenBack.delete(giveUp);
    }
    await holdAndRelease(current, held, lock, id, who, invokedAt);
    await pause(config.thinkMs, current);
  }
}

/** How a loop's events name their holder: the worker, and the loop when there are several. */
interface Holder {
  readonly w: number;
  readonly l?: number;
}

function holderOf(config: WorkerConfig, l: number): Holder {
  return (config.loops ?? 1) > 1 ? { w: index, l } : { w: index };
}

async function holdAndRelease(
  current: Run,
  held: HeldLock,
  lock: string,
  id: number,
  who: Holder,
  invokedAt: number,
): Promise<void> {
  const { config } = current;
  const granted = mono();
  const key = `${lock}|${held.fence}`;
  const handedOutNow = handedOut.get(key);
  handedOut.delete(key);
  emit({
    ev: 'ok',
    ...who,
    seq: id,
    lock,
    t: granted,
    ...(handedOutNow === undefined
      ? {}
      : { handedAt: handedOutNow.at, checkedAt: Math.min(handedOutNow.at, invokedAt + handedOutNow.waitMs) }),
    fence: held.fence,
    owner: held.owner,
    validUntil: held.validUntil(),
    signalAborted: held.signal.aborted,
    ...(held.permits === undefined ? {} : { permits: held.permits }),
    ...(held.names === undefined ? {} : { names: held.names }),
  });
  let lostAt: number | undefined;
  let lostReason: string | undefined;
  const onLost = () => {
    lostAt = mono();
    lostReason = describe(held.signal.reason);
  };
  if (held.signal.aborted) onLost();
  else held.signal.addEventListener('abort', onLost, { once: true });

  emit({ ev: 'enter', ...who, seq: id, t: mono() });
  if (config.shortenExtendMs && !held.signal.aborted) {
    try {
      await held.extend(Math.round(between(config.shortenExtendMs)));
      emit({ ev: 'count', w: index, name: 'shortened extension' });
    } catch {
      // Lost, or Redis unreachable: the lease says so through its signal and validity.
    }
  }
  let skippedWrite = false;
  if (config.honorSignal && held.signal.aborted) skippedWrite = true;
  else if (lockLimit(config.lock) > 1 && !held.alone) {
    // Several holders at once by design: a read-modify-write of one register would lose updates
    // whatever the lock does, so a Semaphore's critical section (and a reader's) only takes its
    // time. A read-write lock's writer is alone: it does the fenced read-modify-write.
    await sleep(between(config.workMs));
  } else {
    const read = await resource({ op: 'read', lock, fence: held.fence, w: index });
    await sleep(between(config.workMs));
    if (config.honorSignal && held.signal.aborted) skippedWrite = true;
    else if (read.ok) {
      await resource({
        op: 'write',
        lock,
        fence: held.fence,
        w: index,
        readVersion: read.version,
        value: read.value + 1,
      });
    }
  }
  if (current.probe && (held.key || held.probe)) await probe(current.probe, held, id, who);
  emit({
    ev: 'exit',
    ...who,
    seq: id,
    t: mono(),
    validUntil: held.validUntil(),
    lostAt,
    lostReason,
    skippedWrite,
  });
  held.signal.removeEventListener('abort', onLost);

  if (config.extendBeforeRelease) {
    // Not awaited on purpose: the extension and the release race each other.
    held.extend().catch(() => {});
  }
  try {
    const released = await held.release();
    emit({ ev: 'release', ...who, seq: id, t: mono(), result: released ? 'released' : 'not-held' });
  } catch (error) {
    emit({ ev: 'release', ...who, seq: id, t: mono(), result: 'error', error: describe(error) });
  }
}

/**
 * Asks Redis, on a direct connection, who holds the lock and for how long, and logs it next to the
 * lease's own belief; the checker compares them. Skipped when the lease already knows it is over
 * (nothing to compare) or when Redis does not answer (paused, down).
 */
async function probe(redis: Probe, held: HeldLock, id: number, who: Holder): Promise<void> {
  const q0 = mono();
  const validUntil = held.validUntil();
  if (held.signal.aborted || validUntil <= q0) return;
  try {
    if (held.probe) {
      // A lock over several servers answers for itself (see redlockHolds in
      // tools/lock-kinds/redlock-mutex.ts).
      const answer = await held.probe();
      const q1 = mono();
      if (answer) emit({ ev: 'probe', ...who, seq: id, q0, q1, validUntil, ...answer });
      return;
    }
    const reply = (await redis.eval(held.probeScript ?? PROBE_SCRIPT, 1, held.key as string, held.owner)) as [
      string,
      number,
    ];
    const q1 = mono();
    const [value, pttl] = reply;
    const owner = ownerTokenOf(value);
    const holder = owner === held.owner ? 'self' : owner === '' ? 'none' : 'other';
    emit({ ev: 'probe', ...who, seq: id, q0, q1, validUntil, holder, pttl: Number(pttl) });
  } catch {
    // No answer: nothing learned.
  }
}

async function pause(range: readonly [number, number], current: Run): Promise<void> {
  const ms = between(range);
  if (ms <= 0 || current.stop.signal.aborted) return;
  await sleep(ms, undefined, { signal: current.stop.signal }).catch(() => {});
}

send({ type: 'ready', pid: process.pid });
