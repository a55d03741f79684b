import { boundedCall, type CallBound } from '../bounded-call.js';
import { elapsedSince, instantOf } from '../clock.js';
import { noReplyError } from '../deadline.js';
import { LockLostError, NotReplicatedError, RedisUnavailableError } from '../errors.js';
import { reportGiveBack, sendGiveBack } from '../give-back.js';
import type { GrantPath, LockBackend, Plan, Won } from '../plan.js';
import { driftMs } from '../timing.js';

/** How a grant that was not confirmed by replicas is given back again after a failure. */
const GIVE_BACK_RETRY = { firstMs: 20, maxMs: 500 } as const;

/** What the confirmation needs of its lock besides its backend: its bound, and `WAIT`. */
export interface ReplicatedLock {
  readonly bound: CallBound;
  /** `WAIT count timeoutMs` on the lock's connection: how many replicas acknowledged its writes. */
  waitForReplicas(count: number, timeoutMs: number): Promise<number>;
}

/**
 * `minReplicaAcks`: a grant or an extension counts only once that many replicas acknowledged the
 * lock's writes (`WAIT`), so a failover right after cannot lose it. It wraps the lock's backend
 * (every lease's renewals go through its `extend`) and its path to a grant (each grant is confirmed
 * or given back), and gives back what it could not confirm: the shell only puts it in the route.
 */
export class ReplicaConfirmation {
  constructor(
    private readonly inner: LockBackend,
    private readonly lock: ReplicatedLock,
    private readonly count: number,
    private readonly ackTimeoutMs: number,
  ) {}

  /** The lock's backend, with extensions that count only once confirmed. */
  backend(): LockBackend {
    return { ...this.inner, extend: (token, ttlMs) => this.extend(token, ttlMs) };
  }

  /**
   * `inner`, with each grant confirmed. A try whose grant was lost before it was confirmed found
   * the lock not free for it, as any other try that lost.
   */
  path(inner: GrantPath): GrantPath {
    return {
      wait: async (plan) => this.confirm(plan, await inner.wait(plan)),
      once: async (plan) => {
        const won = await inner.once(plan);
        if (!won) return undefined;
        try {
          return await this.confirm(plan, won);
        } catch (error) {
          if (error instanceof LockLostError) return undefined;
          throw error;
        }
      },
    };
  }

  /** An extension, then `WAIT`: rejects with `NotReplicatedError` when too few replicas acknowledged. */
  private async extend(token: string, ttlMs: number): Promise<boolean> {
    const extended = await this.inner.extend(token, ttlMs);
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
  private async confirm(plan: Plan, won: Won): Promise<Won> {
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
      () => this.inner.release(plan.token),
      clock,
      GIVE_BACK_RETRY,
      (nextTryAt) => nextTryAt <= goneBy,
    );
    await boundedCall(this.lock.bound, 'the give-back', reportGiveBack(plan.name, plan.token, sending)).catch(
      () => {},
    );
  }
}
