/**
 * The locks a worker can take, behind one small interface, so every scenario runs unchanged for
 * each real primitive and for the deliberately broken ones (negative controls).
 *
 * Redlock is here as `redlock-mutex`: a RedlockMutex over one client per node, probed through the
 * public `inspect()` of a second RedlockMutex on direct connections (so no key name is assumed).
 * The Semaphore is here: `SEMAPHORE_LIMIT` permits, acquisitions of 1 or 2
 * of them, and the checker counts permits held by valid holders against that limit (`lockLimit`).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  FairMutex,
  type Lease,
  LockOwner,
  Mutex,
  ReadWriteLock,
  type RedisClient,
  RedlockMutex,
  ReentrantMutex,
  Semaphore,
} from '../../../src/index.js';
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
  /** Permits held (a Semaphore's; 1 when absent). */
  readonly permits?: number;
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

const never = new AbortController().signal;

function fromLease(lease: Lease, key: string): HeldLock {
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

/** Permits of the fault suite's Semaphore: with 4 workers taking 1 or 2 each, there is contention. */
export const SEMAPHORE_LIMIT = 2;

/**
 * A read-write lock as the at-most-K checker sees it: a writer holds every one of these permits and
 * a reader one, so "at most this many at once" is exactly "readers together, a writer alone".
 */
export const READ_WRITE_PERMITS = 2_147_483_647;

/** The redis-servers of the fault suite's RedlockMutex (a quorum of 2). */
export const REDLOCK_NODES = 3;

/** How many redis-servers a lock kind runs on (1 but for Redlock). */
export function lockNodes(kind: LockKind): number {
  return kind === 'redlock-mutex' || kind === 'naive-redlock' ? REDLOCK_NODES : 1;
}

/** How many permits a lock kind lets be held at once (1: an exclusive lock). */
export function lockLimit(kind: LockKind): number {
  if (kind === 'read-write-lock') return READ_WRITE_PERMITS;
  return kind === 'semaphore' || kind === 'leaky-semaphore' ? SEMAPHORE_LIMIT : 1;
}

/** The probe of a Semaphore holder: its own entry among the live holders, by the server's clock. */
const SEMAPHORE_PROBE = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local members = redis.pcall('zrangebyscore', KEYS[1], '(' .. now, '+inf', 'withscores')
if type(members) ~= 'table' or members.err then return {'', -2} end
for i = 1, #members, 2 do
  if string.sub(members[i], -#ARGV[1] - 1) == '|' .. ARGV[1] then
    return {ARGV[1], tonumber(members[i + 1]) - now}
  end
end
if #members > 0 then return {'another holder', -2} end
return {'', -2}`;

/** Runs a raw command on the worker's client (for the lock kinds that are not Locksmith's). */
export type RawCommand = (...args: string[]) => Promise<unknown>;

/** One acquisition as the worker's config asks for it: a single try, or a waiting acquire. */
async function acquireAs(
  config: WorkerConfig,
  lock: {
    tryAcquire(options: { signal: AbortSignal }): Promise<Lease | null>;
    acquire(options: { signal: AbortSignal; retries?: number | undefined }): Promise<Lease>;
  },
  signal: AbortSignal,
): Promise<Lease> {
  const lease =
    config.acquireMode === 'try'
      ? await lock.tryAcquire({ signal })
      : await lock.acquire({ signal, retries: config.acquireRetries });
  if (!lease) throw new NotAcquired('tryAcquire: held by another owner');
  return lease;
}

/** What `tryAcquire()` finding the lock taken becomes in a worker's history (a failure, not an error). */
export class NotAcquired extends Error {
  override readonly name = 'NotAcquired';
}

export function lockAdapter(
  kind: LockKind,
  client: RedisClient,
  command: RawCommand,
  name: string,
  config: WorkerConfig,
  nodes?: NodeClients,
): LockAdapter {
  const options = { ttlMs: config.ttlMs, autoExtend: config.autoExtend, timeoutMs: config.acquireTimeoutMs };
  const primitive = (lock: Mutex | FairMutex): LockAdapter => ({
    acquire: async (signal) => fromLease(await acquireAs(config, lock, signal), lock.keys.lock),
  });
  switch (kind) {
    case 'mutex':
      return primitive(new Mutex(client, name, options));
    case 'fair-mutex':
      return primitive(new FairMutex(client, name, options));
    case 'reentrant-mutex':
      return reentrantHolds(new ReentrantMutex(client, name, options), config);
    case 'read-write-lock': {
      // A third of the acquisitions write: enough writers to contend with, readers to overlap.
      const rw = new ReadWriteLock(client, name, options);
      return {
        acquire: async (signal) => {
          const write = Math.random() < 1 / 3;
          const side = write ? rw.writeLock() : rw.readLock();
          const lease =
            config.acquireMode === 'try'
              ? await side.tryAcquire({ signal })
              : await side.acquire({ signal, retries: config.acquireRetries });
          if (!lease) throw new NotAcquired('tryAcquire: held by a writer, or a writer held or waited');
          const permits = write ? READ_WRITE_PERMITS : 1;
          return { ...fromLease(lease, rw.readLock().keys.lock), permits, probeScript: SEMAPHORE_PROBE };
        },
      };
    }
    case 'semaphore':
    case 'leaky-semaphore': {
      // The leaky one's Redis admits a permit more than the checker allows: it must be flagged.
      const limit = kind === 'semaphore' ? SEMAPHORE_LIMIT : SEMAPHORE_LIMIT + 1;
      const semaphore = new Semaphore(client, name, { ...options, limit });
      return {
        acquire: async (signal) => {
          const permits = Math.random() < 0.5 ? 1 : 2;
          const lease =
            config.acquireMode === 'try'
              ? await semaphore.tryAcquire({ signal, permits })
              : await semaphore.acquire({ signal, permits, retries: config.acquireRetries });
          if (!lease) throw new NotAcquired('tryAcquire: too few permits free');
          return { ...fromLease(lease, semaphore.keys.lock), permits, probeScript: SEMAPHORE_PROBE };
        },
      };
    }
    case 'redlock-mutex':
    case 'naive-redlock': {
      if (!nodes) throw new Error(`${kind} needs a client per node (WorkerConfig.redisUrls)`);
      const naive = kind === 'naive-redlock';
      const redlockOptions = {
        ...options,
        autoExtend: naive ? false : options.autoExtend,
        nodeTimeoutMs: config.nodeTimeoutMs,
      };
      return redlockHolds(nodes, name, redlockOptions, config, naive);
    }
    case 'counter-fenced':
      return counterFencedLock(command, name, config);
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

/**
 * A ReentrantMutex held twice by one owner: the outer acquisition (waiting, or a try), then a
 * re-entry that must not wait (`tryAcquire()`) and must carry the outer's fencing token (when the
 * re-entry fails under a fault, the outer hold alone). The critical
 * section runs under both holds; they are released in a random order (the outer first half the
 * time, so the hold in the lock key's value is handed to the other), and the lock is free for the
 * next worker only after both. The holder counts as holding until the first of its two leases lapses.
 */
function reentrantHolds(mutex: ReentrantMutex, config: WorkerConfig): LockAdapter {
  return {
    acquire: async (signal) => {
      const owner = new LockOwner();
      const outer =
        config.acquireMode === 'try'
          ? await mutex.tryAcquire({ signal, owner })
          : await mutex.acquire({ signal, owner, retries: config.acquireRetries });
      if (!outer) throw new NotAcquired('tryAcquire: held by another owner');
      // A re-entry that fails (Redis unreachable, its reply lost) is a nested call that failed: the
      // worker still holds the lock by the outer lease, and works and releases with it alone.
      const inner = (await mutex.tryAcquire({ signal, owner }).catch(() => null)) ?? undefined;
      // The re-entry is a round trip more: the outer lease may have lapsed meanwhile (an extension
      // held up by the proxy). A holder is handed over only with validity left, as the lock does.
      if (!outer.isHeld || (inner && !inner.isHeld)) {
        const releases = Promise.allSettled([inner?.release(), outer.release()]);
        await Promise.race([releases, sleep(config.ttlMs)]);
        throw new Error('LockLostError: the outer hold lapsed while the re-entry was in flight');
      }
      if (!inner) return fromLease(outer, mutex.keys.lock);
      if (inner.fencingToken !== outer.fencingToken) {
        // Redis forgot the outer hold (a restart without persistence): the "re-entry" took a free
        // lock afresh. Not a re-entry, so not handed over; any other cause shows as a failure here.
        await Promise.race([Promise.allSettled([inner.release(), outer.release()]), sleep(config.ttlMs)]);
        throw new Error(`re-entry changed the fencing token: ${outer.fencingToken} → ${inner.fencingToken}`);
      }
      const [first, second] = Math.random() < 0.5 ? [inner, outer] : [outer, inner];
      return {
        ...fromLease(outer, mutex.keys.lock),
        validUntil: () => Math.min(outer.validUntil, inner.validUntil) + perfToMono,
        signal: AbortSignal.any([outer.signal, inner.signal]),
        extend: async (ttlMs) => {
          await Promise.all([outer.extend(ttlMs), inner.extend(ttlMs)]);
        },
        // Both are released whatever the first one's outcome (a rejected release must not leave the
        // other hold, and its watchdog, behind); the first error, if any, is the release's.
        release: async () => {
          const [a, b] = await Promise.allSettled([first.release(), second.release()]);
          if (a.status === 'rejected') throw a.reason;
          if (b.status === 'rejected') throw b.reason;
          return a.value && b.value;
        },
      };
    },
  };
}

/**
 * A RedlockMutex (public API only: acquire, tryAcquire, the lease, inspect). Its probe asks a
 * second RedlockMutex of the same name, on direct connections to each node (faults at the proxies do
 * not hide what the servers hold), for `inspect()`: held by this lease when a quorum of nodes hold
 * its token, for as long as the quorum-th longest of those holds lives (from each node's PTTL: the
 * lease's validity is below the expiry of every node it won, a quorum); held by another or nobody when the nodes
 * holding this token and those that did not answer cannot make a quorum; otherwise unknown.
 */
function redlockHolds(
  nodes: NodeClients,
  name: string,
  options: { ttlMs: number; autoExtend: boolean; timeoutMs: number; nodeTimeoutMs: number | undefined },
  config: WorkerConfig,
  /** The negative control: believes it holds the lock until it releases it (see 'naive-short-ttl'). */
  naive = false,
): LockAdapter {
  const { nodeTimeoutMs, ...rest } = options;
  const lock = new RedlockMutex(nodes.clients, name, nodeTimeoutMs === undefined ? rest : options);
  const observer = new RedlockMutex(nodes.probes, name, { ttlMs: options.ttlMs });
  const quorum = Math.floor(nodes.clients.length / 2) + 1;
  return {
    acquire: async (signal) => {
      const lease = await acquireAs(config, lock, signal);
      return {
        ...fromLease(lease, ''),
        key: undefined,
        ...(naive ? { validUntil: () => UNTIL_RELEASED, signal: never } : {}),
        probe: async (): Promise<ProbeAnswer | undefined> => {
          const state = await observer.inspect();
          const perNode = state.nodes;
          if (!Array.isArray(perNode)) {
            // Only the quorum's view: enough to say "held by this lease", nothing else.
            if (state.ownerToken !== lease.token) return undefined;
            return { holder: 'self', pttl: state.remainingTtlMs ?? -2 };
          }
          // The quorum-th longest hold of this token, from each node's own PTTL.
          const selfTtls = perNode
            .filter((n) => n !== undefined && n.ownerToken === lease.token)
            .map((n) => n?.remainingTtlMs ?? -2)
            .sort((a, b) => b - a);
          if (selfTtls.length >= quorum) return { holder: 'self', pttl: selfTtls[quorum - 1] as number };
          const unanswered = perNode.filter((n) => n === undefined).length;
          if (selfTtls.length + unanswered >= quorum) return undefined;
          const other = perNode.some((n) => n?.ownerToken !== undefined && n.ownerToken !== lease.token);
          return { holder: other ? 'other' : 'none', pttl: -2 };
        },
      };
    },
  };
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
            signal: never,
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
