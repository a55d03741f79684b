/**
 * The locks a worker can take, behind one small interface, so every scenario runs unchanged for
 * each real primitive and for the deliberately broken ones (negative controls).
 *
 * Extension point: Redlock and the semaphores plug in here as new `LockKind`s once they exist
 * (Redlock: one client per node and a `probe` per node; a semaphore: `limit` holders and a checker
 * that counts overlaps above the limit instead of above one). Nothing is faked for them today.
 */
import { randomUUID } from 'node:crypto';
import { FairMutex, type Lease, Mutex } from '../../../src/index.js';
import { type LockKind, mono, UNTIL_RELEASED, type WorkerConfig } from './protocol.js';

/** `performance.now()` (the leases' clock) to `mono()`: both are CLOCK_MONOTONIC, a fixed offset apart. */
const perfToMono = mono() - performance.now();

export interface HeldLock {
  readonly fence: number;
  /** The owner token stored in Redis (a random one when there is no lock). */
  readonly owner: string;
  /** The Redis key that holds `owner` while the lock is held (undefined: nothing to probe). */
  readonly key: string | undefined;
  /** Until when (mono) the holder believes it holds the lock. */
  validUntil(): number;
  /** Aborts when the holder learns the lock is lost. */
  readonly signal: AbortSignal;
  extend(): Promise<void>;
  release(): Promise<boolean>;
}

export interface LockAdapter {
  acquire(signal: AbortSignal): Promise<HeldLock>;
}

const never = new AbortController().signal;

function fromLease(lease: Lease, key: string): HeldLock {
  return {
    fence: lease.fencingToken,
    owner: lease.token,
    key,
    validUntil: () => lease.validUntil + perfToMono,
    signal: lease.signal,
    extend: () => lease.extend(),
    release: () => lease.release(),
  };
}

export function lockAdapter(kind: LockKind, client: object, name: string, config: WorkerConfig): LockAdapter {
  const options = { ttlMs: config.ttlMs, autoExtend: config.autoExtend, timeoutMs: config.acquireTimeoutMs };
  switch (kind) {
    case 'mutex': {
      const mutex = new Mutex(client, name, options);
      return { acquire: async (signal) => fromLease(await mutex.acquire({ signal }), mutex.keys.lock) };
    }
    case 'fair-mutex': {
      const mutex = new FairMutex(client, name, options);
      return { acquire: async (signal) => fromLease(await mutex.acquire({ signal }), mutex.keys.lock) };
    }
    case 'no-lock':
      return {
        acquire: async () => ({
          fence: 0,
          owner: randomUUID(),
          key: undefined,
          validUntil: () => UNTIL_RELEASED,
          signal: never,
          extend: async () => {},
          release: async () => true,
        }),
      };
    case 'naive-short-ttl': {
      // The TTL is the config's (shorter than the work) and nothing renews it; the code using it
      // believes it holds the lock until it releases, so that is the validity it reports.
      const mutex = new Mutex(client, name, { ...options, autoExtend: false });
      return {
        acquire: async (signal) => {
          const lease = await mutex.acquire({ signal });
          return {
            ...fromLease(lease, mutex.keys.lock),
            validUntil: () => UNTIL_RELEASED,
            signal: never,
          };
        },
      };
    }
    case 'never-released': {
      const mutex = new Mutex(client, name, options);
      return {
        acquire: async (signal) => ({
          ...fromLease(await mutex.acquire({ signal }), mutex.keys.lock),
          release: async () => true,
        }),
      };
    }
  }
}
