import { instantOf } from '../clock.js';
import { reportGiveBack } from '../give-back.js';
import type { GrantPath, LeaseMaker, LeaseSource, Plan, Won } from '../plan.js';
import {
  type BatchBackend,
  type BatchBounds,
  HolderView,
  type LocalHolder,
  type ProcessBatch,
  ProcessLease,
  scopeTable,
  timeoutOf,
} from './local-batch.js';

/**
 * One hold the process has in Redis (one token: a read-write lock's read hold), held by any number
 * of its callers at once. It ends, released in Redis, when its last holder leaves.
 */
class SharedHold extends ProcessLease {
  readonly holders = new Set<Holder>();
  /** Callers joining it, waiting for a reservation: they keep it from ending. */
  joining = 0;
  /** Nobody joins it any more (its bounds, a writer of the process waiting, a reservation failed). */
  closed = false;
  /** Released in Redis (its last holder left). */
  released = false;
  /** The reservation in flight, which joiners wait for. */
  reserving: Promise<void> | undefined;

  /** Whether a caller with a lease of `ttlMs` may join it now. */
  open(ttlMs: number): boolean {
    if (this.closed || this.lost || this.holds >= this.bounds.holds) return false;
    if (this.clock.now() - this.startedAt >= this.bounds.ms) return false;
    return ttlMs === this.anchor.ttlMs && this.validityLeftMs() > 0;
  }
}

/** One local holder's lease's view of the shared hold: what its extensions and release do. */
class Holder extends HolderView {
  /** It left the hold (released, or its lease was lost). */
  left = false;

  constructor(
    private readonly shared: SharedHolds,
    readonly hold: SharedHold,
    backend: BatchBackend,
  ) {
    super(backend);
  }

  protected get current(): boolean {
    return !this.left && !this.hold.lost;
  }

  extend(token: string, ttlMs: number): Promise<boolean> {
    return this.shared.extend(this, token, ttlMs);
  }

  release(token: string): Promise<boolean> {
    if (this.left) return this.releasedInRedis ? this.backend.release(token) : Promise.resolve(false);
    return this.shared.release(this);
  }
}

/** The `SharedHolds` of one scope (a client) in use, by key: one leaves when it goes idle. */
const tables = new WeakMap<object, Map<string, SharedHolds>>();

/** The shared holds of `key` among `scope`'s: the one in use, else a new one asking Redis by `path`. */
export function sharedHoldsFor(
  scope: object,
  key: string,
  backend: BatchBackend,
  path: GrantPath,
): SharedHolds {
  const byKey = scopeTable(tables, scope);
  let shared = byKey.get(key);
  if (!shared) {
    shared = new SharedHolds(backend, path, byKey, key);
    byKey.set(key, shared);
  }
  return shared;
}

/** The shared holds of `key` among `scope`'s if there are some (a look that makes none). */
export function existingSharedHolds(scope: object, key: string): SharedHolds | undefined {
  return tables.get(scope)?.get(key);
}

/**
 * One lock's shared callers in one process (on one client): a read-write lock's readers. A caller
 * joins the hold the process has in Redis when it may (the hold is open: under its bounds,
 * `maxLocalHolds` holds and `maxLocalBatchMs` since its grant, no writer of the process waiting
 * (`BatchBackend.yieldsNow`), validity left, the same TTL), without a round trip while reserved
 * fencing tokens last; else it asks Redis for a hold of its own, which becomes the one callers
 * join. Each holder has its own lease: the hold's token, its own fencing token (reserved in Redis
 * with one extension, above every token granted before that extension), validity no longer than
 * the hold's in Redis, a signal that aborts when the hold is lost. The hold is released in Redis
 * when its last holder leaves; a closed hold takes no one new, so a writer queued in Redis behind
 * it gets in once its holders are done, and the callers asking Redis after it queue behind it.
 */
export class SharedHolds implements ProcessBatch {
  /** The hold callers join now, if any. */
  private current: SharedHold | undefined;
  /** A caller asking Redis for a hold (one at a time): the others wait for it, then join. */
  private asking: Promise<void> | undefined;
  /** Holds in Redis not released yet (the current one, and closed ones with holders left). */
  private readonly alive = new Set<SharedHold>();

  constructor(
    private readonly backend: BatchBackend,
    private readonly path: GrantPath,
    private readonly byKey: Map<string, SharedHolds>,
    private readonly key: string,
  ) {}

  /** Its callers never hold the lock against each other: a try from this process asks Redis. */
  readonly heldHere = false;

  leases<H extends LocalHolder>(bounds: BatchBounds, makeLease: LeaseMaker<H>): LeaseSource<H> {
    return {
      acquire: (plan) => this.acquire(plan, bounds, makeLease),
      tryOnce: async (plan) => {
        const won = await this.path.once(plan);
        return won && this.start(plan, won, bounds, makeLease);
      },
    };
  }

  private async acquire<H extends LocalHolder>(
    plan: Plan,
    bounds: BatchBounds,
    makeLease: LeaseMaker<H>,
  ): Promise<H> {
    for (;;) {
      const hold = this.joinable(plan);
      if (hold) {
        const lease = await this.join(hold, plan, makeLease);
        if (lease) return lease;
      } else if (this.asking) {
        await behind(this.asking, plan);
      } else {
        break;
      }
    }
    const asking = this.path.wait(plan);
    const settled = asking.then(
      () => {},
      () => {},
    );
    this.asking = settled;
    try {
      return this.start(plan, await asking, bounds, makeLease);
    } finally {
      if (this.asking === settled) this.asking = undefined;
      this.leaveTableIfIdle();
    }
  }

  /** The hold `plan`'s call may join now; a current hold that may take no one more is closed. */
  private joinable(plan: Plan): SharedHold | undefined {
    const hold = this.current;
    if (!hold) return undefined;
    if (this.backend.yieldsNow?.() || !hold.open(hold.anchor.ttlMs)) {
      this.close(hold);
      return undefined;
    }
    return hold.open(plan.options.ttlMs) ? hold : undefined;
  }

  /**
   * Joins `hold`: a reserved fencing token and half a TTL of validity left, else one extension that
   * reserves more first (one in flight, which every joiner waits for). Undefined: the hold closed
   * or was lost meanwhile, and the caller asks Redis.
   */
  private async join<H extends LocalHolder>(
    hold: SharedHold,
    plan: Plan,
    makeLease: LeaseMaker<H>,
  ): Promise<H | undefined> {
    hold.joining += 1;
    try {
      while (hold.nextFence > hold.lastFence || hold.validityLeftMs() < hold.anchor.ttlMs / 2) {
        if (!hold.open(plan.options.ttlMs)) return undefined;
        hold.reserving ??= this.reserve(hold, plan);
        await hold.reserving;
        plan.options.signal?.throwIfAborted();
      }
      if (!hold.open(plan.options.ttlMs)) return undefined;
      hold.holds += 1;
      const { anchor } = hold;
      const grant = {
        fencingToken: hold.nextFence++,
        sentAt: anchor.mono,
        sentAtWall: anchor.wall,
        ttlMs: anchor.ttlMs,
      };
      return this.admit(hold, { ...plan, token: hold.token }, { grant, attempts: 0 }, makeLease);
    } finally {
      hold.joining -= 1;
      this.settleInBackground(hold);
    }
  }

  /** One extension of `hold` that reserves the fencing tokens its bounds may still hand out. */
  private async reserve(hold: SharedHold, plan: Plan): Promise<void> {
    const { ttlMs, replyTimeoutMs } = plan.options;
    const count = Math.max(1, hold.bounds.holds - hold.holds);
    const sent = instantOf(hold.clock);
    try {
      const last = await hold.reserve(this.backend, ttlMs, replyTimeoutMs, count);
      if (last === undefined) this.close(hold);
      else if (last <= 0) this.lose(hold);
      else if (!hold.lost) {
        hold.reanchor({ ...sent, ttlMs });
        hold.lastFence = last;
        hold.nextFence = last - count + 1;
      }
    } finally {
      hold.reserving = undefined;
    }
  }

  /** A grant from Redis (an acquire's, a try's): a new hold, the one callers join unless one is open. */
  private start<H extends LocalHolder>(
    plan: Plan,
    won: Won,
    bounds: BatchBounds,
    makeLease: LeaseMaker<H>,
  ): H {
    const hold = SharedHold.granted(plan, won, bounds);
    this.alive.add(hold);
    const current = this.current;
    if (current && !current.closed && current.open(current.anchor.ttlMs)) hold.closed = true;
    else this.current = hold;
    return this.admit(hold, plan, won, makeLease);
  }

  private admit<H extends LocalHolder>(hold: SharedHold, plan: Plan, won: Won, makeLease: LeaseMaker<H>): H {
    const holder = new Holder(this, hold, this.backend);
    hold.holders.add(holder);
    const lease = makeLease(plan, won, holder);
    holder.lease = lease;
    // A lease lost by itself (its validity ran out) leaves: the hold must not wait for its release.
    lease.onLoss(() => {
      if (holder.left) return;
      const ended = this.leave(holder);
      if (ended) {
        holder.releasedInRedis = true;
        void reportGiveBack(hold.name, hold.token, ended);
      }
    });
    return lease;
  }

  /** @internal A holder's extension: of the hold in Redis, for every holder. */
  async extend(holder: Holder, token: string, ttlMs: number): Promise<boolean> {
    const { hold } = holder;
    if (holder.left || hold.lost || hold.released) return false;
    // One that buys less than is left (a shorter `extend(ttlMs)`) may shorten the hold for everyone.
    const others = [...hold.holders].filter((other) => other !== holder).map((other) => other.lease);
    const sent = hold.extending(ttlMs, others);
    const extended = await this.backend.extend(token, ttlMs);
    if (!extended) this.lose(hold);
    else hold.reanchor(sent);
    return extended;
  }

  /** @internal A holder's release: it leaves; the last to leave releases the hold in Redis. */
  release(holder: Holder): Promise<boolean> {
    const { hold } = holder;
    const ended = this.leave(holder);
    if (!ended) return Promise.resolve(!hold.lost);
    holder.releasedInRedis = true;
    return ended;
  }

  private leave(holder: Holder): Promise<boolean> | undefined {
    holder.left = true;
    holder.hold.holders.delete(holder);
    return this.settle(holder.hold);
  }

  /** Ends `hold` (released in Redis) when nobody holds or joins it; resolves as that release does. */
  private settle(hold: SharedHold): Promise<boolean> | undefined {
    if (hold.released || hold.holders.size > 0 || hold.joining > 0) return undefined;
    hold.released = true;
    hold.closed = true;
    if (this.current === hold) this.current = undefined;
    const released = this.backend.release(hold.token);
    this.alive.delete(hold);
    this.leaveTableIfIdle();
    return hold.lost ? released.then(() => false) : released;
  }

  /**
   * Idle (no hold alive, nobody asking Redis): it leaves its scope's table, so a process touching
   * many names keeps nothing per name, and the next caller makes a new one.
   */
  private leaveTableIfIdle(): void {
    if (this.alive.size > 0 || this.asking) return;
    if (this.byKey.get(this.key) === this) this.byKey.delete(this.key);
  }

  /** Nobody joins `hold` any more; it ends when its holders are done. */
  private close(hold: SharedHold): void {
    hold.closed = true;
    if (this.current === hold) this.current = undefined;
    this.settleInBackground(hold);
  }

  /** `settle`, its release in Redis (if any) reported as a give-back: nobody waits for it. */
  private settleInBackground(hold: SharedHold): void {
    const ended = this.settle(hold);
    if (ended) void reportGiveBack(hold.name, hold.token, ended);
  }

  /** Redis no longer holds `hold`: every holder's lease is lost now. */
  private lose(hold: SharedHold): void {
    if (hold.lost) return;
    hold.lost = true;
    for (const holder of [...hold.holders]) holder.lease?.revoke('not-owner');
    this.close(hold);
  }

  /** The hold of `token`, if one is alive. */
  private holdOf(token: string): SharedHold | undefined {
    for (const hold of this.alive) if (hold.token === token) return hold;
    return undefined;
  }

  forget(token: string): void {
    const hold = this.holdOf(token);
    if (hold) this.lose(hold);
  }

  extendedFromOutside(token: string, ttlMs: number): ((extended: boolean) => void) | undefined {
    const hold = this.holdOf(token);
    if (!hold) return undefined;
    const sent = hold.extending(
      ttlMs,
      [...hold.holders].map((holder) => holder.lease),
    );
    return (extended) => {
      if (!extended) this.lose(hold);
      else if (!hold.lost) hold.reanchor(sent);
    };
  }
}

/** Waits for `ask` (another caller's, asking Redis) to settle, within `plan`'s deadline and signal. */
async function behind(ask: Promise<void>, plan: Plan): Promise<void> {
  const { signal, clock } = plan.options;
  signal?.throwIfAborted();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      void ask.then(resolve);
      onAbort = () => reject(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      const leftMs = plan.deadline - clock.now();
      if (Number.isFinite(leftMs)) timer = setTimeout(() => reject(timeoutOf(plan)), Math.max(0, leftMs));
    });
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
