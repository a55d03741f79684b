/**
 * The locks a worker can take, by id: every lock kind of the registry (tools/lock-kinds/) that has
 * a fault facet, and the deliberately broken ones (negative controls) the checker must flag, most
 * of them a registry kind used the wrong way. How each kind is held lives with the kind.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../src/index.js';
import * as sources from '../../../src/index.js';
import { type LockKind, lockKinds } from '../../../tools/lock-kinds/registry.js';
import {
  believesUntilReleased,
  type FaultFacet,
  type FaultLock,
  fromLease,
  type HoldContext,
  type LockAdapter,
  NEVER,
  type NodeClients,
  perfToMono,
  type RawCommand,
} from './held-lock.js';
import { type LockId, UNTIL_RELEASED, type WorkerConfig } from './protocol.js';

const kinds = lockKinds(sources);
const library = kinds.flatMap((kind) => (kind.fault ? [kind.fault] : []));

/** The registry's kind of fault id `id`, for the controls that misuse it. */
function libraryKind(id: string): LockKind & { readonly fault: FaultFacet } {
  const found = kinds.find((kind): kind is LockKind & { fault: FaultFacet } => kind.fault?.id === id);
  if (!found) throw new Error(`no lock kind with the fault id ${id}`);
  return found;
}

const mutex = libraryKind('mutex');
const semaphore = libraryKind('semaphore').fault;
const redlock = libraryKind('redlock-mutex').fault;
const redlockSemaphore = libraryKind('redlock-semaphore').fault;

/**
 * A library kind run with another policy, each its own code path under every scenario with its
 * checker: a RedlockSemaphore of one permit takes no read of the servers after a grant (the
 * servers' own limits keep the quorum's, `grantsKeepLimit`), which the kind's limit of 2 never skips.
 */
const variants: Record<string, FaultLock> = {
  'redlock-semaphore-1': {
    ...redlockSemaphore,
    label: `RedlockSemaphore/1, ${redlockSemaphore.nodes} servers`,
    limit: 1,
  },
};

/** A Mutex taken with a plain waiting `acquire()`, whatever the config's acquire mode. */
function waitingMutex(at: HoldContext, options = at.options): LockAdapter {
  const lock = mutex.create(at.client, at.name, options);
  return { acquire: async (signal) => fromLease(await lock.acquire({ signal }), lock.keys.lock) };
}

/** The negative controls: deliberately broken locking, each a scenario of its own must see flagged. */
const controls: Record<string, FaultLock> = {
  /**
   * A RedlockMutex with a TTL shorter than the critical section and no renewal, used by code that
   * believes it holds the lock until it releases it (the Redlock negative control).
   */
  'naive-redlock': {
    label: 'naive Redlock',
    nodes: redlock.nodes,
    holds: (at) =>
      believesUntilReleased(redlock.holds({ ...at, options: { ...at.options, autoExtend: false } })),
  },
  /** A Semaphore whose Redis admits one permit more than the limit it is checked against. */
  'leaky-semaphore': {
    label: 'leaky Semaphore',
    limit: semaphore.limit,
    holds: (at) => semaphore.holds({ ...at, limit: at.limit + 1 }),
  },
  /** No lock at all: the "acquisition" succeeds at once and believes it lasts until release. */
  'no-lock': {
    label: 'no lock',
    holds: () => ({
      acquire: async () => ({
        fence: 0,
        owner: randomUUID(),
        key: undefined,
        validUntil: () => UNTIL_RELEASED,
        signal: NEVER,
        extend: async () => {},
        release: async () => true,
      }),
    }),
  },
  /**
   * A Mutex with the config's TTL (shorter than the work) and no renewal, used by code that
   * believes it holds the lock until it releases it, so that is the validity it reports (as a lock
   * without leases would).
   */
  'naive-short-ttl': {
    label: 'naive Mutex',
    holds: (at) => believesUntilReleased(waitingMutex(at, { ...at.options, autoExtend: false })),
  },
  /** A Mutex whose leases are dropped instead of released: their watchdogs renew them for ever. */
  'never-released': {
    label: 'leaky Mutex',
    holds: (at) => {
      const held = waitingMutex(at);
      return { acquire: async (signal) => ({ ...(await held.acquire(signal)), release: async () => true }) };
    },
  },
  /**
   * The fencing scheme Locksmith had before tokens got a server-time floor: SET NX PX plus INCR of a
   * counter, which a Redis restarted without persistence resets to 1 (tokens go backwards).
   */
  'counter-fenced': {
    label: 'INCR-fenced',
    holds: (at) => counterFencedLock(at.command, at.name, at.config),
  },
};

const faultLocks: Record<LockId, FaultLock> = {
  ...Object.fromEntries(library.map((fault) => [fault.id, fault])),
  ...variants,
  ...controls,
};

/** The lock of id `id`, library kind or control. */
export function faultLock(id: LockId): FaultLock {
  const found = faultLocks[id];
  if (!found) throw new Error(`unknown lock ${id} (known: ${Object.keys(faultLocks).join(', ')})`);
  return found;
}

/** How many redis-servers a lock kind runs on (1 but for Redlock). */
export function lockNodes(id: LockId): number {
  return faultLock(id).nodes ?? 1;
}

/** How many permits a lock kind lets be held at once (1: an exclusive lock). */
export function lockLimit(id: LockId): number {
  return faultLock(id).limit ?? 1;
}

/** Its name in the suite's table. */
export function lockLabel(id: LockId): string {
  return faultLock(id).label;
}

export function lockAdapter(
  id: LockId,
  client: sources.RedisClient,
  command: RawCommand,
  name: string,
  config: WorkerConfig,
  nodes?: NodeClients,
): LockAdapter {
  const { driftFactor, handOffAfterMs, wallClockSkewMs } = config;
  const options = {
    ttlMs: config.ttlMs,
    autoExtend: config.autoExtend,
    timeoutMs: config.acquireTimeoutMs,
    ...(driftFactor === undefined ? {} : { driftFactor }),
    ...(handOffAfterMs === undefined ? {} : { handOffAfterMs }),
    ...(wallClockSkewMs === undefined ? {} : { clock: skewedClock(wallClockSkewMs) }),
  };
  return faultLock(id).holds({ client, command, name, options, config, nodes, limit: lockLimit(id) });
}

/** A clock whose wall reading is `skewMs` off (`WorkerConfig.wallClockSkewMs`); its monotonic one is right. */
function skewedClock(skewMs: number): Clock {
  return { now: () => performance.now(), wallNow: () => Date.now() + skewMs };
}

const COUNTER_ACQUIRE =
  "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) end return 0";
const COUNTER_RELEASE =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

/**
 * A correct lease lock whose fencing tokens come from a plain INCR counter (Locksmith's scheme before
 * the server-time floor). Honest about validity (ttl − elapsed − drift from the send), so only its
 * tokens can make the checker flag it: after a restart without persistence they start over at 1.
 */
function counterFencedLock(command: RawCommand, name: string, config: WorkerConfig): LockAdapter {
  const key = `locksmith:{${name}}`;
  return {
    acquire: async (signal) => {
      const deadline = performance.now() + config.acquireTimeoutMs;
      for (;;) {
        signal.throwIfAborted();
        const owner = randomUUID();
        const sentAt = performance.now();
        const reply = await command(
          'EVAL',
          COUNTER_ACQUIRE,
          '2',
          key,
          `${key}:fence`,
          owner,
          String(config.ttlMs),
        );
        const fence = Number(reply);
        if (fence > 0) {
          const validUntil = sentAt + config.ttlMs - Math.ceil(config.ttlMs * 0.01) - 2 + perfToMono;
          return {
            fence,
            owner,
            key,
            validUntil: () => validUntil,
            signal: NEVER,
            extend: async () => {},
            release: async () => Number(await command('EVAL', COUNTER_RELEASE, '1', key, owner)) === 1,
          };
        }
        if (performance.now() > deadline) throw new Error('LockTimeoutError: counter-fenced lock');
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    },
  };
}
