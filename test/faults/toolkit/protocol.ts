/**
 * Messages between the test parent and its worker processes (over the Node IPC channel).
 *
 * Time: every timestamp is `mono()`, CLOCK_MONOTONIC in milliseconds. It is one clock for every
 * process on the machine (unlike `performance.timeOrigin + performance.now()`, whose origin is a
 * wall-clock reading taken at each process' start, so an NTP slew between two starts would skew
 * them), which is what comparing critical sections across processes needs.
 */

/** Milliseconds on the machine-wide monotonic clock, comparable across processes. */
export function mono(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * "Until released", as a validity deadline: a lock without leases believes that. Finite on purpose:
 * IPC carries JSON, which turns Infinity into null.
 */
export const UNTIL_RELEASED = Number.MAX_SAFE_INTEGER;

/**
 * Which lock the workers take: the fault id of a lock kind of the registry ('mutex', 'semaphore',
 * 'redlock-mutex', ...) or of a negative control ('no-lock', ...); locks.ts has them all.
 */
export type LockId = string;

export interface WorkerConfig {
  readonly scenario: string;
  /** Which entry of `clientKinds` the worker locks with in this run (see client-rotation.ts). */
  readonly clientKind: string;
  /** Where the lock's Redis client connects (possibly through the fault proxy). */
  readonly redisUrl: string;
  /** A direct connection for the checker's probes, so faults never hide what Redis holds. */
  readonly probeUrl: string;
  /**
   * A lock over several servers (Redlock): where each node's client connects (`redisUrl` is the
   * first) and each node's direct probe URL (`probeUrl` is the first). Absent for one server.
   */
  readonly redisUrls?: readonly string[] | undefined;
  readonly probeUrls?: readonly string[] | undefined;
  /**
   * A Redis Cluster, for a cluster scenario: where the worker's cluster client (`clientKind` names
   * one of `clusterClientKinds`) and its probe (an ioredis `Cluster`, straight to the nodes) start.
   * `redisUrl` and `probeUrl` are then unused.
   */
  readonly cluster?:
    | {
        readonly startupNodes: readonly { host: string; port: number }[];
        /** The cluster's `requirepass`, if it has one. */
        readonly password?: string;
        /** The key prefix of the worker's client kind, if any (its probe prefixes keys the same way). */
        readonly keyPrefix?: string;
      }
    | undefined;
  /** Redlock's `nodeTimeoutMs` (default: the library's). */
  readonly nodeTimeoutMs?: number | undefined;
  readonly lock: LockId;
  readonly lockNames: readonly string[];
  readonly ttlMs: number;
  readonly autoExtend: boolean;
  readonly acquireTimeoutMs: number;
  /** The critical section's duration, drawn uniformly from [min, max] ms. */
  readonly workMs: readonly [number, number];
  /** Pause between a release and the next acquire, [min, max] ms. */
  readonly thinkMs: readonly [number, number];
  /**
   * Check `lease.signal.aborted` before writing (what correct code does). Off, the worker writes
   * whatever happened, like a process that was paused between its check and its write.
   */
  readonly honorSignal: boolean;
  /** Ask Redis (directly) before releasing whether it agrees with the lease's validity. */
  readonly probe: boolean;
  /** Cancel acquires with an AbortSignal after a random delay (abort-storm scenario). */
  readonly abortAfterMs?: readonly [number, number] | undefined;
  /** Fire `lease.extend()` without waiting, then release at once (extension racing a release). */
  readonly extendBeforeRelease?: boolean | undefined;
  /**
   * On entering the critical section, `extend()` the lease to a TTL drawn from [min, max] ms, shorter
   * than `ttlMs`: validity must shrink to what that extension bought.
   */
  readonly shortenExtendMs?: readonly [number, number] | undefined;
  /** `retries` for `acquire()` (default: the library's); 0 gives up after one attempt. */
  readonly acquireRetries?: number | undefined;
  /** 'try' takes locks with `tryAcquire()` (one attempt, null when taken) instead of `acquire()`. */
  readonly acquireMode?: 'acquire' | 'try' | undefined;
  /**
   * The locks' `driftFactor` (default: the library's). A large one widens the stretch in which a
   * hand-off heard late has no validity left while its key still lives (it is then given back).
   */
  readonly driftFactor?: number | undefined;
  /** The locks' `handOffAfterMs` (Mutex, RedlockMutex; default: the library's). */
  readonly handOffAfterMs?: number | undefined;
  /**
   * The locks' wall clock (`clock.wallNow()`) is this many ms off (negative: behind); their
   * monotonic clock is right. A process whose clock is wrong, as a busy host's may be.
   */
  readonly wallClockSkewMs?: number | undefined;
  /**
   * A call that gives a grant back while it still waits (a hand-off it heard too late to use) gives
   * up itself (aborts) after a delay drawn from [min, max] ms: it has queued again with the same
   * token by then.
   */
  readonly giveUpAfterGiveBackMs?: readonly [number, number] | undefined;
  /**
   * How many acquire loops the worker runs at once on its one client (default 1), each its own
   * holder (`l` in its events): a Mutex's concurrent callers of one name queue in the process and
   * take turns with its lease in Redis (its local batch), sharing the owner token stored there.
   */
  readonly loops?: number | undefined;
}

/**
 * One event of one acquisition (`seq` numbers acquisitions within a worker). A holder is worker `w`'s
 * loop `l` (0 when absent: a worker of one loop); `w` alone names the process (its freezes, its
 * give-backs).
 */
export type HistoryEvent =
  | {
      readonly ev: 'invoke';
      readonly w: number;
      readonly l?: number;
      readonly seq: number;
      readonly lock: string;
      readonly t: number;
    }
  | {
      readonly ev: 'ok';
      readonly w: number;
      readonly l?: number;
      readonly seq: number;
      readonly lock: string;
      readonly t: number;
      /** When the library handed the lease out (its `acquired` event), when known; at most `t`. */
      readonly handedAt?: number;
      /**
       * When the library made its last validity check before the hand-out (the call's start plus
       * the event's `waitMs`, read with that check), when known; at most `handedAt`.
       */
      readonly checkedAt?: number;
      readonly fence: number;
      readonly owner: string;
      /** The lease's validity deadline (mono) when granted. */
      readonly validUntil: number;
      /** Whether the lease's signal had already aborted when acquire() resolved. */
      readonly signalAborted: boolean;
      /** Permits the acquisition holds (a Semaphore's; 1 when absent). */
      readonly permits?: number;
      /**
       * Every name the acquisition holds, with its fencing token, when it holds several (a
       * MultiMutex's: `lock` and its partners); absent: `lock` alone, with `fence`.
       */
      readonly names?: Readonly<Record<string, number>>;
    }
  | {
      readonly ev: 'fail';
      readonly w: number;
      readonly l?: number;
      readonly seq: number;
      readonly lock: string;
      readonly t: number;
      readonly error: string;
    }
  | {
      readonly ev: 'enter';
      readonly w: number;
      readonly l?: number;
      readonly seq: number;
      readonly t: number;
    }
  | {
      readonly ev: 'probe';
      readonly w: number;
      readonly l?: number;
      readonly seq: number;
      /** When the probe was sent and when its reply came. */
      readonly q0: number;
      readonly q1: number;
      /** The lease's validity deadline as it stood when the probe was sent. */
      readonly validUntil: number;
      /** Who Redis says holds the lock: this lease, someone else, or nobody. */
      readonly holder: 'self' | 'other' | 'none';
      /** Redis' PTTL of the lock key (-1: no expiry, -2: absent). */
      readonly pttl: number;
    }
  | {
      readonly ev: 'exit';
      readonly w: number;
      readonly l?: number;
      readonly seq: number;
      readonly t: number;
      /** The lease's validity deadline at exit (moved by each successful extension, to what it bought). */
      readonly validUntil: number;
      /** When the lease's signal aborted (lock lost), if it did. */
      readonly lostAt: number | undefined;
      readonly lostReason: string | undefined;
      /** Whether the write was skipped because the signal had aborted. */
      readonly skippedWrite: boolean;
    }
  | {
      readonly ev: 'release';
      readonly w: number;
      readonly l?: number;
      readonly seq: number;
      readonly t: number;
      readonly result: 'released' | 'not-held' | 'error';
      readonly error?: string;
    }
  /**
   * The library gave a token back (its `give-back` lock event): a caller gave up while an attempt's
   * outcome was unknown, or a grant came too late to be used. `released` is undefined when the
   * give-back failed. `t` is when its reply arrived: Redis applied it before then.
   */
  | {
      readonly ev: 'give-back';
      readonly w: number;
      readonly t: number;
      readonly token: string;
      readonly released: boolean | undefined;
    }
  /**
   * The harness froze worker `w` (SIGSTOP) from `from` until `t` (SIGCONT), on the shared monotonic
   * clock. Recorded by the parent, since the worker cannot see its own freeze.
   */
  | { readonly ev: 'frozen'; readonly w: number; readonly from: number; readonly t: number }
  /** A worker-side occurrence a scenario wants counted (e.g. a shortened extension that succeeded). */
  | { readonly ev: 'count'; readonly w: number; readonly name: string }
  /** Something that must never happen in a worker (an unhandled rejection, an uncaught error). */
  | { readonly ev: 'crash'; readonly w: number; readonly t: number; readonly error: string };

/** A read or a write at the protected resource, carrying the writer's fencing token. */
export type ResourceRequest =
  | { readonly op: 'read'; readonly lock: string; readonly fence: number; readonly w: number }
  | {
      readonly op: 'write';
      readonly lock: string;
      readonly fence: number;
      readonly w: number;
      /** The version the writer read: a different current version means a lost update. */
      readonly readVersion: number;
      readonly value: number;
    };

export type ResourceReply =
  | { readonly ok: true; readonly version: number; readonly value: number }
  | { readonly ok: false; readonly reason: 'stale-token'; readonly highest: number };

export type ToWorker =
  | { readonly type: 'start'; readonly config: WorkerConfig }
  | { readonly type: 'stop' }
  | { readonly type: 'close' }
  | { readonly type: 'resource-reply'; readonly id: number; readonly reply: ResourceReply };

export type FromWorker =
  | { readonly type: 'ready'; readonly pid: number }
  | { readonly type: 'started' }
  | { readonly type: 'events'; readonly events: HistoryEvent[] }
  /** A scenario may pause the worker when its read arrives: it is then inside its critical section. */
  | { readonly type: 'resource'; readonly id: number; readonly request: ResourceRequest }
  | { readonly type: 'stopped' }
  | { readonly type: 'closed' };
