import { boundedCall } from '../bounded-call.js';
import { type Clock, elapsedSince, type Instant, instantOf } from '../clock.js';
import { type LockLostReason, LockTimeoutError } from '../errors.js';
import { emitLockEvent } from '../events.js';
import { reportGiveBack } from '../give-back.js';
import type { GrantPath, LeaseMaker, LeaseSource, LockBackend, Plan, QueueArrival, Won } from '../plan.js';
import { driftMs } from '../timing.js';

/** What a lock kind that batches gives its process's batch: its backend, and fencing tokens to reserve. */
export interface BatchBackend extends LockBackend {
  /**
   * Compare-and-extend to `ttlMs` that also reserves `count` fencing tokens above every one granted
   * so far: the highest of them, or 0 when `token` no longer holds the lock.
   */
  reserveFences(token: string, ttlMs: number, count: number): Promise<number>;
  /**
   * Releases `token` handing the lock to another process's oldest waiter at once, whatever the
   * kind's release policy (a Mutex's window would let this process's next caller take it back):
   * how a run that reached its bounds with callers still queued here ends. Absent: `release`.
   */
  handOver?(token: string): Promise<boolean>;
  /**
   * How many runs the process may have at once, each its own permit in Redis (a Semaphore's
   * `limit`): its callers ask Redis for another one while it holds fewer. Absent: 1 (an exclusive
   * lock: a grant from Redis proves any run still here gone).
   */
  readonly runs?: number;
  /**
   * Whether a caller of this process that must go first waits outside the batch now (a
   * read-write lock's writer, behind this process's readers): `SharedHolds` lets nobody join the
   * process's hold then, so it ends when its holders are done, and the callers after ask Redis,
   * whose queue puts them behind the writer. Absent: never.
   */
  readonly yieldsNow?: () => boolean;
}

/**
 * What the lock shell asks of its process's batch of a lock's callers: a `LocalBatch` (callers take
 * turns), `SharedHolds` (callers hold together: a read-write lock's readers) or `WaitingWriters`
 * (each writer alone, counted while it waits, which closes the readers' shared hold).
 */
export interface ProcessBatch {
  /** The batch as the lease source of calls bounded by `bounds`, whose leases `makeLease` makes. */
  leases<H extends LocalHolder>(bounds: BatchBounds, makeLease: LeaseMaker<H>): LeaseSource<H>;
  /** Callers of this process hold every permit it may: a try from it would not get one. */
  readonly heldHere: boolean;
  /** `token` was released from outside its leases (`releaseToken`): its holders lose it now. */
  forget(token: string): void;
  /** `token` is being extended from outside its leases (`extendToken`); the callback takes the reply. */
  extendedFromOutside(token: string, ttlMs: number): ((extended: boolean) => void) | undefined;
}

/** How long one run may go on: holds in a row, and milliseconds since its grant from Redis. */
export interface BatchBounds {
  readonly holds: number;
  readonly ms: number;
}

/**
 * What the batch needs of a local holder's lease (a `Lease`, made by the call's `LeaseMaker`): to
 * know whether it still holds, hear when it is lost, and end or shorten it from outside.
 */
export interface LocalHolder {
  readonly isHeld: boolean;
  onLoss(listener: () => void): void;
  revoke(reason: LockLostReason): void;
  limitValidity(since: Instant, ttlMs: number): void;
}

/** A caller of this process queued behind the process's own holder. */
interface LocalWaiter {
  readonly plan: Plan;
  /** How its lease is made from a turn. */
  readonly makeLease: LeaseMaker<LocalHolder>;
  /** Its turn: a lease handed on inside the process, or `undefined`: ask Redis (its slot is kept). */
  readonly resolve: (lease: LocalHolder | undefined) => void;
  readonly reject: (error: unknown) => void;
  /** Stops its timeout timer and abort listener. */
  readonly settle: () => void;
  /** Taken out of the queue for a turn that needs a reservation first (its listeners stay on). */
  pending: boolean;
  /** It gave up (timeout, signal) while pending: the reservation's turn goes to the next. */
  gone: boolean;
}

/** When the process's lease in Redis was last known to start (its grant or last extension), for how long. */
interface Anchor extends Instant {
  readonly ttlMs: number;
}

/**
 * A lease this process holds in Redis for its own callers (one Redis token), and the fencing tokens
 * reserved for the holders after the first: a `Run` (callers in turn) or a shared hold (callers
 * together, `SharedHolds`).
 */
export class ProcessLease {
  /** Holds granted on it so far (the Redis grant is the first). */
  holds = 1;
  /** The next reserved fencing token and the last one (next > last: none left). */
  nextFence = 1;
  lastFence = 0;
  /** Redis said the token no longer holds the lock (an extension or a reservation found it gone). */
  lost = false;

  /** When it began (its grant's send, monotonic): callers take it for at most `bounds.ms` after. */
  readonly startedAt: number;

  constructor(
    readonly name: string,
    readonly token: string,
    readonly bounds: BatchBounds,
    readonly clock: Clock,
    readonly driftFactor: number,
    public anchor: Anchor,
  ) {
    this.startedAt = anchor.mono;
  }

  /** The process's lease of `plan`'s grant from Redis (`won`), for callers within `bounds`. */
  static granted<L extends ProcessLease>(
    this: new (
      ...args: ConstructorParameters<typeof ProcessLease>
    ) => L,
    plan: Plan,
    won: Won,
    bounds: BatchBounds,
  ): L {
    const { grant } = won;
    const { clock, driftFactor, ttlMs } = plan.options;
    const anchor = { mono: grant.sentAt, wall: grant.sentAtWall, ttlMs };
    return new this(plan.name, plan.token, bounds, clock, driftFactor, anchor);
  }

  /** Validity left of the process's Redis lease, as a lease granted at the anchor counts it. */
  validityLeftMs(): number {
    const { ttlMs } = this.anchor;
    return ttlMs - driftMs(ttlMs, this.driftFactor) - elapsedSince(this.clock, this.anchor);
  }

  /**
   * An extension sent at `sent` succeeded: the lease counts from it, unless one sent later already
   * set the anchor. Redis applies a token's extensions in the order they were sent, so the last one
   * sent sets the expiry; a reservation answered after a shorter `extendToken` sent later would
   * otherwise give the next holder validity past the lease in Redis.
   */
  reanchor(sent: Anchor): void {
    if (sent.mono >= this.anchor.mono) this.anchor = sent;
  }

  /**
   * An extension of its token to `ttlMs`, about to be sent: Redis may apply it before the reply, or
   * without one reaching us, so one that buys less than is left counts from now, for the process
   * and for `leases` (those not extending it themselves). Returns when it was sent.
   */
  extending(ttlMs: number, leases: Iterable<LocalHolder | undefined>): Anchor {
    const sent = { ...instantOf(this.clock), ttlMs };
    if (ttlMs - driftMs(ttlMs, this.driftFactor) < this.validityLeftMs()) {
      this.anchor = sent;
      for (const lease of leases) lease?.limitValidity(sent, ttlMs);
    }
    return sent;
  }

  /**
   * One compare-and-extend to `ttlMs` that reserves `count` fencing tokens (`reserveFences`),
   * bounded by a TTL too (a reply later than that could not renew anything): the highest reserved,
   * 0 when the token no longer holds, or undefined when no reply came in time (or the call failed).
   */
  reserve(
    backend: BatchBackend,
    ttlMs: number,
    replyTimeoutMs: number,
    count: number,
  ): Promise<number | undefined> {
    const bound = {
      name: this.name,
      clock: this.clock,
      replyTimeoutMs: Math.min(ttlMs, replyTimeoutMs),
      disconnected: () => backend.disconnected(),
    };
    return boundedCall(bound, 'the reservation', backend.reserveFences(this.token, ttlMs, count)).catch(
      () => undefined,
    );
  }
}

/** The lease this process holds in Redis, passed among its own callers in turn. */
class Run extends ProcessLease {
  /** The turn holding now (undefined while a reservation for the next is in flight). */
  turn: Turn | undefined;
}

/**
 * One local holder's lease's view of its process's lease in Redis (the backend its lease is given):
 * a `Turn` of a run, or a holder of a shared hold (`SharedHolds`).
 */
export abstract class HolderView implements LockBackend {
  lease: LocalHolder | undefined;
  /** It ended its process's lease with a release in Redis: a re-sent release goes there too. */
  releasedInRedis = false;

  constructor(protected readonly backend: BatchBackend) {}

  /** Whether it holds through its process's lease still (else Redis is not asked). */
  protected abstract get current(): boolean;
  abstract extend(token: string, ttlMs: number): Promise<boolean>;
  abstract release(token: string): Promise<boolean>;

  isHeldBy(token: string): Promise<boolean> {
    return this.current ? this.backend.isHeldBy(token) : Promise.resolve(false);
  }

  disconnected(): string | undefined {
    return this.backend.disconnected();
  }
}

/**
 * One local holder's lease's view of the run: what its extensions and its release do. Once it has
 * passed the run on (or released it), it holds nothing.
 */
class Turn extends HolderView {
  done = false;
  /** Its loss ends the run (watched once someone waits behind it). */
  watched = false;

  constructor(
    private readonly batch: LocalBatch,
    readonly run: Run,
    backend: BatchBackend,
  ) {
    super(backend);
  }

  protected get current(): boolean {
    return !this.done && this.run.turn === this && this.batch.holds(this.run);
  }

  async extend(token: string, ttlMs: number): Promise<boolean> {
    if (!this.current) return false;
    const { run } = this;
    // For whoever the run passes to meanwhile (the lease counts its own).
    const sent = run.extending(ttlMs, []);
    const extended = await this.backend.extend(token, ttlMs);
    if (extended) run.reanchor(sent);
    else run.lost = true;
    return extended;
  }

  release(token: string): Promise<boolean> {
    if (this.done) return this.releasedInRedis ? this.backend.release(token) : Promise.resolve(true);
    if (!this.current) return this.backend.release(token);
    this.done = true;
    const ended = this.batch.endTurn(this.run);
    if (ended === 'passed') return Promise.resolve(true);
    this.releasedInRedis = true;
    return ended;
  }
}

/**
 * The batches of one scope (a client) in use, by lock key: a batch leaves when it goes idle, so the
 * table never grows with the names a process has touched (see `LocalBatch.listed`).
 */
const batches = new WeakMap<object, Map<string, LocalBatch>>();

/**
 * The batch of `key` among `scope`'s: the one in use, else `kept` listed again (the batch the calling
 * lock object used last, idle since: one lock object cycling alone reuses one batch rather than
 * making one per acquisition), else a new one made with `backend` and `path`. `kept` is reused only
 * when it was made with `backend`: a batch releases through the lock object that made it.
 */
export function localBatchFor(
  scope: object,
  key: string,
  backend: BatchBackend,
  path: GrantPath,
  kept?: LocalBatch,
): LocalBatch {
  if (kept?.listed) return kept;
  const byKey = scopeTable(batches, scope);
  let batch = byKey.get(key);
  if (!batch) {
    batch = kept?.madeFor(byKey, key, backend) ? kept : new LocalBatch(backend, path, byKey, key);
    batch.listed = true;
    byKey.set(key, batch);
  }
  return batch;
}

/** `scope`'s table among `tables` (a process's batches of one client, by key), made on first use. */
export function scopeTable<T>(tables: WeakMap<object, Map<string, T>>, scope: object): Map<string, T> {
  let byKey = tables.get(scope);
  if (!byKey) {
    byKey = new Map();
    tables.set(scope, byKey);
  }
  return byKey;
}

/** The batch of `key` among `scope`'s if there is one (a look that makes none). */
export function existingLocalBatch(scope: object, key: string): LocalBatch | undefined {
  return batches.get(scope)?.get(key);
}

/**
 * One lock's callers in one process (on one client): one of them at a time asks Redis; the others
 * queue here in arrival order, and the lock the process holds in Redis is passed among them without
 * a round trip, up to `bounds` (holds in a row, and time since the run's grant: the options of the
 * call that got it from Redis), then released in Redis, where another process's waiter gets it first.
 * A kind with several permits (`BatchBackend.runs`) has a run per permit the process holds: while it
 * holds fewer than that, the first caller queued here asks Redis for another (one asks at a time),
 * and a caller queued here takes whichever comes first, a run passed on or its turn to ask.
 *
 * Each local holder gets its own lease: the process's Redis token; its own fencing token, reserved
 * in Redis (above every earlier holder's in any process, below every later one's; with several
 * permits, above every token granted before its run reserved, and rising along the run); validity no
 * longer than what is left of the process's Redis lease; a signal that aborts when that is lost.
 * Passing on needs reserved tokens and half a TTL of validity left: when either is missing, one
 * extension reserves the rest of the run's tokens and renews the lease first (one round trip per
 * run, usually). A run whose lease is lost ends at once, and the next caller asks Redis.
 */
export class LocalBatch implements ProcessBatch {
  /** The runs in progress: at most one per permit the process may hold (`capacity`). */
  private readonly runs = new Set<Run>();
  /** How many runs it may have at once (`BatchBackend.runs`). */
  private readonly capacity: number;
  /** Callers of this process asking Redis now (one, unless tries and calls outside batching). */
  private askingRedis = 0;
  private readonly waiters: LocalWaiter[] = [];
  /**
   * The age in Redis's queue of this process's callers asking in turn: one that gives up hands its
   * entry's arrival to the next (else its age would restart, and with it the Mutex's wait bound).
   */
  private arrival: QueueArrival = { ms: 0 };

  /**
   * @internal Whether this batch is its key's entry in its scope's table. It leaves the table when
   * it goes idle (nobody holds, asks or waits), so the table holds only batches in use; the lock
   * object that used it may keep it and list it again on its next call (`localBatchFor`). An idle
   * batch carries no state of its runs (no run, no waiters, a fresh queue arrival), so the next call
   * finds it as a new one would be.
   */
  listed = false;

  constructor(
    private readonly backend: BatchBackend,
    /** How a caller of this process asks Redis (every lock object of one batch asks alike). */
    private readonly path: GrantPath,
    /** Its scope's table, and its key there. */
    private readonly byKey: Map<string, LocalBatch>,
    private readonly key: string,
  ) {
    this.capacity = backend.runs ?? 1;
  }

  /** @internal Whether this batch is `key`'s of the table `byKey`, made with `backend`. */
  madeFor(byKey: Map<string, LocalBatch>, key: string, backend: BatchBackend): boolean {
    return this.byKey === byKey && this.key === key && this.backend === backend;
  }

  /**
   * This batch as the lease source of calls bounded by `bounds`, whose leases `makeLease` makes:
   * the same object while they are the same (the calls of one lock object without overrides).
   */
  leases<H extends LocalHolder>(bounds: BatchBounds, makeLease: LeaseMaker<H>): LeaseSource<H> {
    const last = this.lastSource;
    if (last?.bounds === bounds && last.makeLease === makeLease) return last.source as LeaseSource<H>;
    const source: LeaseSource<H> = {
      acquire: (plan) => this.acquire(plan, bounds, makeLease),
      tryOnce: async (plan) => {
        const won = await this.path.once(plan);
        return won && this.hold(plan, won, bounds, makeLease);
      },
    };
    this.lastSource = { bounds, makeLease, source };
    return source;
  }

  /** The lease source `leases` made last, and for what. */
  private lastSource:
    | { bounds: BatchBounds; makeLease: LeaseMaker<LocalHolder>; source: LeaseSource<LocalHolder> }
    | undefined;

  /**
   * Whether callers of this process hold every permit its batch may (the lock, for an exclusive
   * kind): a try from this process would not get one.
   */
  get heldHere(): boolean {
    return this.liveRuns() >= this.capacity;
  }

  /** The run in progress that holds by `token`, if any. */
  private runOf(token: string): Run | undefined {
    for (const run of this.runs) if (run.token === token) return run;
    return undefined;
  }

  /**
   * `token`, the run's, was released or extended from outside its leases (`releaseToken`, the
   * book's `release_lock`): the run ends here, and the next caller asks Redis.
   */
  forget(token: string): void {
    const run = this.runOf(token);
    if (!run) return;
    run.lost = true;
    run.turn?.lease?.revoke('not-owner');
    run.turn = undefined;
    this.runs.delete(run);
    this.next();
  }

  /**
   * `token` is being extended to `ttlMs` from outside its leases (`extendToken`): when it is the
   * run's, nobody of the run trusts more than this buys from now on (it may shorten the lease in
   * Redis), and the run re-anchors to it. The returned callback takes the reply: a token found gone
   * ends the run.
   */
  extendedFromOutside(token: string, ttlMs: number): ((extended: boolean) => void) | undefined {
    const run = this.runOf(token);
    if (!run) return undefined;
    const sent = run.extending(ttlMs, [run.turn?.lease]);
    return (extended) => {
      if (!this.runs.has(run)) return;
      if (extended) run.reanchor(sent);
      else this.forget(token);
    };
  }

  /**
   * How many runs are in progress, once those whose lease is known to be gone (validity ran out, or
   * its holder's lease was lost) while nobody waited to notice have ended.
   */
  private liveRuns(): number {
    for (const run of this.runs) {
      const lease = run.turn?.lease;
      const holderLost = lease !== undefined && !run.turn?.done && !lease.isHeld;
      if (!run.lost && !holderLost && run.validityLeftMs() > 0) continue;
      if (run.turn) run.turn.done = true;
      run.lost = true;
      this.abandon(run);
    }
    return this.runs.size;
  }

  /** @internal Whether `run` is in progress. */
  holds(run: Run): boolean {
    return this.runs.has(run);
  }

  /**
   * The lease of `plan`'s call: passed on inside the process when its callers hold every permit it
   * may hold (the lock) or one of them asks Redis, else from Redis. A caller alone (the common case)
   * goes straight to Redis, without an async frame of its own here.
   */
  private acquire<H extends LocalHolder>(
    plan: Plan,
    bounds: BatchBounds,
    makeLease: LeaseMaker<H>,
  ): Promise<H> {
    // Runs found gone end first: their end may hand a waiter its turn to ask.
    if (this.liveRuns() >= this.capacity || this.askingRedis > 0) {
      return this.acquireBehind(plan, bounds, makeLease);
    }
    this.askingRedis += 1;
    return this.askRedis(plan, bounds, makeLease);
  }

  /** Queues behind this process's holder or asker: a lease passed on, or the turn to ask Redis. */
  private async acquireBehind<H extends LocalHolder>(
    plan: Plan,
    bounds: BatchBounds,
    makeLease: LeaseMaker<H>,
  ): Promise<H> {
    // Its own maker made it: a waiter's lease is made with the waiter's `makeLease`.
    const lease = (await this.queue(plan, makeLease)) as H | undefined;
    if (lease) return lease;
    return this.askRedis(plan, bounds, makeLease);
  }

  /**
   * Asks Redis (the caller is counted in `askingRedis`), carrying the process's queue arrival, and
   * makes the first hold of a new run from the grant.
   */
  private askRedis<H extends LocalHolder>(
    plan: Plan,
    bounds: BatchBounds,
    makeLease: LeaseMaker<H>,
  ): Promise<H> {
    const { name, token, mode, deadline, options } = plan;
    const asking: Plan = { name, token, mode, deadline, options, queueArrival: this.arrival };
    const gaveUp = (error: unknown): never => {
      this.askingRedis -= 1;
      this.next();
      throw error;
    };
    let waiting: Promise<Won>;
    try {
      waiting = this.path.wait(asking);
    } catch (error) {
      return Promise.reject(error).catch(gaveUp);
    }
    return waiting.then((won) => {
      this.askingRedis -= 1;
      this.arrival = { ms: 0 };
      const lease = this.hold(plan, won, bounds, makeLease);
      // Fewer runs than permits it may hold: the next caller queued here asks for another.
      this.next();
      return lease;
    }, gaveUp);
  }

  /** The lease of a grant from Redis (an acquire's, a try's): the first hold of a new run. */
  private hold<H extends LocalHolder>(
    plan: Plan,
    won: Won,
    bounds: BatchBounds,
    makeLease: LeaseMaker<H>,
  ): H {
    // An exclusive lock's run still here is one whose lease Redis no longer holds (it expired
    // unreleased): this grant proves it, so it ends now. Another permit proves nothing of the others.
    if (this.capacity === 1) this.runs.clear();
    const run = Run.granted(plan, won, bounds);
    this.runs.add(run);
    return this.grantTurn(run, plan, won, makeLease);
  }

  /**
   * The current holder is done: pass the run on to the first waiter, or release it in Redis.
   * Resolves as the release does (true: it held the lock).
   */
  endTurn(run: Run): 'passed' | Promise<boolean> {
    run.turn = undefined;
    if (this.passOn(run)) return 'passed';
    this.runs.delete(run);
    // Callers still queued here: the run ended at its bounds (or was lost), and another process's
    // waiter goes first, as the bounds promise; else the kind's release policy applies.
    const { backend } = this;
    const released =
      this.waiters.length > 0 && backend.handOver ? backend.handOver(run.token) : backend.release(run.token);
    this.next();
    return released;
  }

  private grantTurn<H extends LocalHolder>(run: Run, plan: Plan, won: Won, makeLease: LeaseMaker<H>): H {
    const turn = new Turn(this, run, this.backend);
    run.turn = turn;
    const lease = makeLease(plan, won, turn);
    turn.lease = lease;
    // Once there are local waiters, a lost lease must end the run even if its holder never calls
    // release(): they would wait for it until their own timeout.
    if (this.waiters.length > 0) this.watchLoss(run, turn);
    return lease;
  }

  /** Ends `run` when `turn`'s lease is lost, unless it was passed on before. */
  private watchLoss(run: Run, turn: Turn): void {
    const lease = turn.lease;
    if (!lease || turn.watched) return;
    turn.watched = true;
    const onLost = () => {
      if (turn.done || run.turn !== turn || !this.runs.has(run)) return;
      turn.done = true;
      run.lost = true;
      this.abandon(run);
    };
    lease.onLoss(onLost);
  }

  /** Ends a run whose lease is lost: its token is given back (harmless if gone), the next caller asks Redis. */
  private abandon(run: Run): void {
    run.turn = undefined;
    if (!this.runs.delete(run)) return;
    void reportGiveBack(run.name, run.token, this.backend.release(run.token));
    this.next();
  }

  /**
   * Passes `run` to the first waiter when the run may go on: someone waits, the run has holds left
   * and Redis did not say it is lost, and the lease has validity left. Without reserved tokens or
   * with less than half a TTL left, one extension renews it and reserves the rest first.
   */
  private passOn(run: Run): boolean {
    const waiter = this.waiters[0];
    if (!waiter || run.lost || run.holds >= run.bounds.holds) return false;
    if (run.clock.now() - run.startedAt >= run.bounds.ms) return false;
    const left = run.validityLeftMs();
    if (left <= 0) return false;
    this.waiters.shift();
    run.holds += 1;
    const sameTtl = waiter.plan.options.ttlMs === run.anchor.ttlMs;
    if (run.nextFence <= run.lastFence && sameTtl && left >= run.anchor.ttlMs / 2) {
      waiter.settle();
      this.grantLocally(run, waiter, run.nextFence++);
    } else {
      // Its timeout and signal still count while the reservation is in flight (see `queue`).
      waiter.pending = true;
      void this.reserveThenGrant(run, waiter);
    }
    return true;
  }

  private grantLocally(run: Run, waiter: LocalWaiter, fencingToken: number): void {
    const { plan } = waiter;
    const { anchor } = run;
    const grant = { fencingToken, sentAt: anchor.mono, sentAtWall: anchor.wall, ttlMs: anchor.ttlMs };
    const lease = this.grantTurn(
      run,
      { ...plan, token: run.token },
      { grant, attempts: 0 },
      waiter.makeLease,
    );
    waiter.resolve(lease);
  }

  /**
   * One round trip that renews the lease to the waiter's TTL and reserves the run's remaining
   * fencing tokens, then the waiter's turn. When it fails, the run ends (released in Redis) and the
   * waiter asks Redis itself, within its own deadline.
   */
  private async reserveThenGrant(run: Run, waiter: LocalWaiter): Promise<void> {
    const { ttlMs, replyTimeoutMs } = waiter.plan.options;
    const count = run.bounds.holds - run.holds + 1;
    const sent = instantOf(run.clock);
    // Unanswered within a TTL, the run ends.
    const lastFence = (await run.reserve(this.backend, ttlMs, replyTimeoutMs, count)) ?? 0;
    if (this.runs.has(run) && lastFence <= 0) {
      run.lost = true;
      this.runs.delete(run);
      void reportGiveBack(run.name, run.token, this.backend.release(run.token));
    }
    if (!this.runs.has(run)) {
      // Ended (lost, or a grant from Redis proved the lease gone): the waiter asks Redis itself.
      if (waiter.gone) {
        this.next();
        return;
      }
      waiter.settle();
      this.askingRedis += 1;
      waiter.resolve(undefined);
      return;
    }
    run.reanchor({ ...sent, ttlMs });
    run.lastFence = lastFence;
    run.nextFence = lastFence - count + 1;
    if (waiter.gone) {
      // It gave up while the reservation was in flight: the run goes on to the next waiter.
      run.holds -= 1;
      const ended = this.endTurn(run);
      if (ended !== 'passed') void reportGiveBack(run.name, run.token, ended);
      return;
    }
    waiter.settle();
    this.grantLocally(run, waiter, run.nextFence++);
  }

  /** Queues `plan`'s call here until its turn, its deadline or its signal. */
  private queue(plan: Plan, makeLease: LeaseMaker<LocalHolder>): Promise<LocalHolder | undefined> {
    const { signal, clock } = plan.options;
    signal?.throwIfAborted();
    emitLockEvent({ type: 'contended', lockName: plan.name });
    const queued = new Promise<LocalHolder | undefined>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const leave = (error: unknown) => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        else if (waiter.pending) waiter.gone = true;
        waiter.settle();
        reject(error);
      };
      const onAbort = () => leave(signal?.reason);
      const waiter: LocalWaiter = {
        plan,
        makeLease,
        resolve,
        reject,
        settle: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
        pending: false,
        gone: false,
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      const leftMs = plan.deadline - clock.now();
      if (Number.isFinite(leftMs)) timer = setTimeout(() => leave(timeoutOf(plan)), Math.max(0, leftMs));
    });
    // Queued first: a run found lost here ends now and hands this waiter its turn to ask Redis.
    for (const run of this.runs) if (run.turn) this.watchLoss(run, run.turn);
    return queued;
  }

  /**
   * Nobody of this process asks Redis, and it holds fewer permits than it may (for an exclusive
   * lock: none): the first waiter asks Redis next.
   */
  private next(): void {
    if (this.askingRedis > 0 || this.runs.size >= this.capacity) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.settle();
      this.askingRedis += 1;
      waiter.resolve(undefined);
    } else if (this.runs.size === 0) {
      this.arrival = { ms: 0 };
      // Idle: it leaves its scope's table (a process touching many names must not keep a batch per
      // name); a lock object that kept it lists it again on its next call.
      if (this.listed) {
        this.listed = false;
        this.byKey.delete(this.key);
      }
    }
  }
}

/** A local waiter's timeout (it never asked Redis), reported as the waiting loop reports one. */
export function timeoutOf(plan: Plan): LockTimeoutError {
  const { timeoutMs } = plan.options;
  emitLockEvent({ type: 'timed-out', lockName: plan.name, timeoutMs, attempts: 0 });
  return new LockTimeoutError(plan.name, timeoutMs, 0, { behindLocalHolder: true });
}
