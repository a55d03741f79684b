import type { EffectiveOptions, LockOptions } from './options.js';

/**
 * One acquire call, built once by the lock shell and passed as is: to the lock kind, which makes
 * the call's attempts from it; to the waiting loop; and to the lease the call ends in.
 */
export interface Plan<Options extends LockOptions = LockOptions> {
  /** The lock's name. */
  readonly name: string;
  /** The owner token every attempt of the call uses, and its lease's token. */
  readonly token: string;
  /** `wait`: `acquire()`, which may queue and be woken; `try`: `tryAcquire()`, one attempt. */
  readonly mode: 'wait' | 'try';
  /** When the call gives up, on `options.clock` (`Infinity`: never; for `try`, now). */
  readonly deadline: number;
  /** The lock's options with the call's overrides and its signal. */
  readonly options: EffectiveOptions<Options>;
  /**
   * Where the call's age in the lock's queue is kept: the server ms it first joined (0: not yet).
   * The callers of one process's batch that ask Redis in turn share one, so the one asking next
   * keeps the age of the first (the Mutex's wait bound counts from it). Undefined: the call's own.
   */
  readonly queueArrival?: QueueArrival | undefined;
}

/** A queue arrival that several calls of one process carry in turn (see `Plan.queueArrival`). */
export interface QueueArrival {
  ms: number;
}

/** What an attempt that took the lock learned: the grant its lease is built from. */
export interface Grant {
  readonly fencingToken: number;
  /** Each name's fencing token, for a lock over several names (MultiMutex); else the one name's. */
  readonly fencingTokens?: Readonly<Record<string, number>>;
  /** Monotonic instant no later than the moment the lease's TTL started on the server. */
  readonly sentAt: number;
  /**
   * Wall-clock time (`clock.wallNow()`) read with `sentAt`, when known: then a host suspend while
   * the request was in flight shortens the lease too (see `Clock`).
   */
  readonly sentAtWall?: number | undefined;
  /**
   * The TTL that started at `sentAt`, when it is not the call's own `ttlMs`: a lock passed on inside
   * its process's batch is valid for what is left of the lease that process holds in Redis.
   */
  readonly ttlMs?: number | undefined;
}

/** What an acquire call that got the lock returns: its grant, and how many attempts it took. */
export interface Won {
  readonly grant: Grant;
  readonly attempts: number;
}

/**
 * What the acquire calls and leases of one lock call back into. Neither knows the lock kind or the
 * Redis client behind it.
 */
export interface LockBackend {
  /** Compare-and-pexpire: true when still held by `token` and now extended to `ttlMs`. */
  extend(token: string, ttlMs: number): Promise<boolean>;
  /**
   * Compare-and-delete, leaving any waiting state of `token` (a queue entry): true when `token`
   * held the lock and it is now released (or handed on). Safe whatever the token's state.
   */
  release(token: string): Promise<boolean>;
  /** Asks Redis whether `token` holds the lock now. */
  isHeldBy(token: string): Promise<boolean>;
  /** Why the client has no connection right now, when it knows (it is reconnecting). */
  disconnected(): string | undefined;
}

/**
 * One lock's way to a grant in Redis, the same for every call: the waiting loop over the kind's
 * attempts, confirmed by replicas when the lock asks for that (`ReplicaConfirmation.path`).
 */
export interface GrantPath {
  /** Waits for the lock (`acquire()`): the grant, or the rejection that ends the call. */
  wait(plan: Plan): Promise<Won>;
  /** One attempt (`tryAcquire()`): the grant, or undefined when the lock is not free for this call. */
  once(plan: Plan): Promise<Won | undefined>;
}

/**
 * Where one call's lease comes from: a grant from Redis made into a lease, or a turn in its
 * process's batch. The lock shell picks one per call; the lease kind is the shell's (`Lease`).
 */
export interface LeaseSource<L> {
  acquire(plan: Plan): Promise<L>;
  /** One attempt: the lease, or undefined when the lock is not free for this call. */
  tryOnce(plan: Plan): Promise<L | undefined>;
}

/** Makes the lease of `plan`'s call from its grant, over `backend` (`Lease.grant`). */
export type LeaseMaker<L> = (plan: Plan, won: Won, backend: LockBackend) => L;
