/**
 * How the fault suite's workers hold a lock, behind one small interface, so every scenario runs
 * unchanged for each lock kind of the registry (tools/lock-kinds/) and for the negative controls
 * (locks.ts). Nothing here imports the library: the kinds are handed the one they run on.
 */
import type { Clock, Lease, RedisClient } from '../../../src/index.js';
import { mono, UNTIL_RELEASED, type WorkerConfig } from './protocol.js';

/** `performance.now()` (the leases' clock) to `mono()`: both are CLOCK_MONOTONIC, a fixed offset apart. */
export const perfToMono = mono() - performance.now();

export interface HeldLock {
  readonly fence: number;
  /** The owner token stored in Redis (a random one when there is no lock). */
  readonly owner: string;
  /** The Redis key that holds `owner` while the lock is held (undefined: nothing to probe). */
  readonly key: string | undefined;
  /** Until when (mono) the holder believes it holds the lock. */
  validUntil(): number;
  /** Permits held (a Semaphore's; 1 when absent). */
  readonly permits?: number;
  /**
   * Every name it holds, each with its fencing token, when it holds several at once (a
   * MultiMutex's, the lock's name among them): the checker judges each name's holders. Absent: the
   * lock's name alone, with `fence`.
   */
  readonly names?: Readonly<Record<string, number>>;
  /**
   * Held alone although the kind admits several holders at once (a read-write lock's writer): the
   * worker then does the fenced read-modify-write, as under an exclusive lock.
   */
  readonly alone?: boolean;
  /**
   * A script that answers {owner token or '', ms the holder has left} for KEYS[1] = `key` and ARGV[1]
   * = `owner`, when the key is not a plain string holding the owner (a Semaphore's holders).
   */
  readonly probeScript?: string;
  /**
   * Asks Redis who holds the lock and for how long, when that is not one key holding `owner` (a
   * Redlock's quorum): undefined when the answer cannot tell (too few nodes answered).
   */
  readonly probe?: () => Promise<ProbeAnswer | undefined>;
  /** Aborts when the holder learns the lock is lost. */
  readonly signal: AbortSignal;
  /** Extends to `ttlMs` (default: the lease's current TTL). */
  extend(ttlMs?: number): Promise<void>;
  release(): Promise<boolean>;
}

/** What a probe learned: who holds the lock, and the PTTL of the hold (as the probe event has them). */
export interface ProbeAnswer {
  readonly holder: 'self' | 'other' | 'none';
  readonly pttl: number;
}

/** The clients of a lock over several servers: one per node, and a direct probe client per node. */
export interface NodeClients {
  readonly clients: readonly RedisClient[];
  readonly probes: readonly RedisClient[];
}

export interface LockAdapter {
  acquire(signal: AbortSignal): Promise<HeldLock>;
}

/** Runs a raw command on the worker's client (for the lock kinds that are not Locksmith's). */
export type RawCommand = (...args: string[]) => Promise<unknown>;

/** What a worker hands a lock kind to take one lock with. */
export interface HoldContext {
  readonly client: RedisClient;
  readonly command: RawCommand;
  /** The lock's name. */
  readonly name: string;
  /** The lock options the worker's config asks for. */
  readonly options: {
    readonly ttlMs: number;
    readonly autoExtend: boolean;
    readonly timeoutMs: number;
    readonly driftFactor?: number;
    readonly handOffAfterMs?: number;
    readonly clock?: Clock;
  };
  readonly config: WorkerConfig;
  /** A client per node, for a lock over several servers (undefined on one server). */
  readonly nodes: NodeClients | undefined;
  /**
   * The permits to build the lock with: the kind's `limit`, but a negative control may build it
   * with more than the checker holds it to (a leaky semaphore).
   */
  readonly limit: number;
}

/** A lock as the fault suite runs it: its name in the table, what the checker allows, how it is held. */
export interface FaultLock {
  /** Its name in the suite's table ('Semaphore/2'). */
  readonly label: string;
  /** How many permits may be held at once, the checker's K (default 1: an exclusive lock). */
  readonly limit?: number;
  /** How many redis-servers it runs on (default 1); it runs only the scenarios written for that many. */
  readonly nodes?: number;
  /** The worker's way to take the lock named `at.name`, one acquisition per call. */
  holds(at: HoldContext): LockAdapter;
}

/** A library lock kind's part in the fault suite: a `FaultLock` under the id scenarios name it by. */
export interface FaultFacet extends FaultLock {
  /** Its id in `--locks`, FAULTS_LOCKS, a scenario's `locks` and `WorkerConfig.lock` ('fair-mutex'). */
  readonly id: string;
}

/** A signal that never aborts: what a holder without leases listens to. */
export const NEVER: AbortSignal = new AbortController().signal;

export function fromLease(lease: Lease, key: string): HeldLock {
  return {
    fence: lease.fencingToken,
    owner: lease.token,
    key,
    validUntil: () => lease.validUntil + perfToMono,
    signal: lease.signal,
    extend: (ttlMs) => lease.extend(ttlMs),
    release: () => lease.release(),
  };
}

/** What `tryAcquire()` finding the lock taken becomes in a worker's history (a failure, not an error). */
export class NotAcquired extends Error {
  override readonly name = 'NotAcquired';
}

/** A lock's two ways to acquire, with the options `more` of a kind (a Semaphore's permits, an owner). */
interface Acquirable<More extends object> {
  tryAcquire(options: More & { signal: AbortSignal }): Promise<Lease | null>;
  acquire(options: More & { signal: AbortSignal; retries?: number | undefined }): Promise<Lease>;
}

/**
 * One acquisition as the worker's config asks for it: a single try, or a waiting acquire. A try
 * that finds the lock taken throws `NotAcquired` saying why (`taken`).
 */
export async function acquireAs<More extends object>(
  config: WorkerConfig,
  lock: Acquirable<More>,
  signal: AbortSignal,
  more: More,
  taken = 'held by another owner',
): Promise<Lease> {
  const lease =
    config.acquireMode === 'try'
      ? await lock.tryAcquire({ signal, ...more })
      : await lock.acquire({ signal, ...more, retries: config.acquireRetries });
  if (!lease) throw new NotAcquired(`tryAcquire: ${taken}`);
  return lease;
}

/** An exclusive lock's leases, as they are: the holder is whoever holds the owner in `keys.lock`. */
export function leaseHolds(
  lock: Acquirable<object> & { readonly keys: { readonly lock: string } },
  config: WorkerConfig,
): LockAdapter {
  return { acquire: async (signal) => fromLease(await acquireAs(config, lock, signal, {}), lock.keys.lock) };
}

/** A holder that believes it holds the lock until it releases it (leases or not): a broken user. */
export function believesUntilReleased(adapter: LockAdapter): LockAdapter {
  return {
    acquire: async (signal) => ({
      ...(await adapter.acquire(signal)),
      validUntil: () => UNTIL_RELEASED,
      signal: NEVER,
    }),
  };
}
