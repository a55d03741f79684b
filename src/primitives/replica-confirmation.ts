import { boundedCall, type CallBound } from '../bounded-call.js';
import { elapsedSince, instantOf } from '../clock.js';
import { noReplyError } from '../deadline.js';
import { LockLostError, NotReplicatedError, RedisUnavailableError } from '../errors.js';
import { reportGiveBack, sendGiveBack } from '../lease/give-back.js';
import type { Plan, Won } from '../plan.js';
import { driftMs } from '../timing.js';

/** How a grant that was not confirmed by replicas is given back again after a failure. */
const GIVE_BACK_RETRY = { firstMs: 20, maxMs: 500 } as const;

/** What the confirmation needs of its lock: its plain extension and release, and `WAIT`. */
export interface ReplicatedLock {
  readonly bound: CallBound;
  sendExtend(token: string, ttlMs: number): Promise<boolean>;
  sendRelease(token: string): Promise<boolean>;
  /** `WAIT count timeoutMs` on the lock's connection: how many replicas acknowledged its writes. */
  waitForReplicas(count: number, timeoutMs: number): Promise<number>;
}

/**
 * `minReplicaAcks`: a grant or an extension counts only once that many replicas acknowledged the
 * lock's writes (`WAIT`), so a failover right after cannot lose it. It wraps the lock's extension
 * (every lease's renewals go through `extend`) and its grants (`confirm`), and gives back what it
 * could not confirm: the shell knows only that a path to Redis may have this layer.
 */
export class ReplicaConfirmation {
  constructor(
    private readonly lock: ReplicatedLock,
    private readonly count: number,
    private readonly ackTimeoutMs: number,
  ) {}

  /** An extension, then `WAIT`: rejects with `NotReplicatedError` when too few replicas acknowledged. */
  async extend(token: string, ttlMs: number): Promise<boolean> {
    const extended = await this.lock.sendExtend(token, ttlMs);
    if (!extended) return false;
    const acked = await this.lock.waitForReplicas(this.count, this.ackTimeoutMs);
    if (acked < this.count) {
      throw new NotReplicatedError(this.lock.bound.name, acked, this.count, this.ackTimeoutMs);
    }
    return true;
  }

  /**
   * A grant, confirmed or given back. It is extended first, on this lock's connection: WAIT counts
   * the writes of the connection that asks, and a grant handed over by another client's release
   * was written on that client's. The extension bought a whole TTL, so the lease counts its validity
   * from when it was sent. Bounded like any round trip (plus the WAIT's own timeout), and by the
   * call's signal; whatever goes wrong, the token is given back.
   */
  async confirm(plan: Plan, won: Won): Promise<Won> {
    const { clock, ttlMs, driftFactor, signal } = plan.options;
    const sent = instantOf(clock);
    let extended: boolean;
    try {
      extended = await boundedCall(
        this.lock.bound,
        'confirming the grant by its replicas',
        this.extend(plan.token, ttlMs),
        {
          extraMs: this.ackTimeoutMs,
          signal,
        },
      );
    } catch (error) {
      await this.giveBack(plan);
      throw error;
    }
    if (extended && ttlMs - driftMs(ttlMs, driftFactor) - elapsedSince(clock, sent) > 0) {
      return {
        grant: { ...won.grant, sentAt: sent.mono, sentAtWall: sent.wall, ttlMs },
        attempts: won.attempts,
      };
    }
    await this.giveBack(plan);
    if (!extended) throw new LockLostError(plan.name, 'not-owner');
    throw new RedisUnavailableError(plan.name, 'the grant was confirmed too late to be used', {
      cause: noReplyError(elapsedSince(clock, sent), this.lock.bound.disconnected()),
    });
  }

  /**
   * Gives back a grant that was not confirmed: re-sent while it may still hold the lock, waited for
   * at most one reply's time (the rest goes on in the background and is reported).
   */
  private async giveBack(plan: Plan): Promise<void> {
    const { clock, ttlMs } = plan.options;
    const goneBy = clock.now() + ttlMs;
    const sending = sendGiveBack(
      () => this.lock.sendRelease(plan.token),
      clock,
      GIVE_BACK_RETRY,
      (nextTryAt) => nextTryAt <= goneBy,
    );
    await boundedCall(this.lock.bound, 'the give-back', reportGiveBack(plan.name, plan.token, sending)).catch(
      () => {},
    );
  }
}
