import type { Clock } from '../clock.js';
import type { LockLostReason } from '../errors.js';
import { extendAfterMs, extendRetryAfterMs } from '../timing.js';

export interface WatchdogHooks {
  clock: Clock;
  autoExtend: boolean;
  ttlMs(): number;
  validUntil(): number;
  /** One extension; 'lost' when Redis no longer holds the token. Rejects on a Redis error. */
  extend(): Promise<'extended' | 'lost'>;
  onLost(reason: LockLostReason, cause?: unknown): void;
}

/**
 * Keeps one lease alive (when `autoExtend`) and notices when its validity runs out.
 *
 * A re-armed timer, not an interval: the next extension is planned from when the previous one
 * was sent, so a slow reply never stacks a second extension on top of one in flight. A failed
 * extension is retried while validity remains. The expiry timer fires even when nothing is
 * extended, so a lease without auto-extension still aborts its signal the moment it runs out.
 * Timers are unref()'d: a held lock never keeps the process alive by itself.
 */
export class Watchdog {
  private extendTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lastError: unknown;

  constructor(private readonly hooks: WatchdogHooks) {}

  start(sentAt: number): void {
    this.armExpiry();
    if (this.hooks.autoExtend) {
      this.armExtend(Math.max(0, sentAt + extendAfterMs(this.hooks.ttlMs()) - this.hooks.clock.now()));
    }
  }

  /** After a manual extension: validity moved, and the next automatic one can wait longer. */
  rescheduleAfterExtend(): void {
    if (this.stopped) return;
    this.armExpiry();
    if (this.hooks.autoExtend) this.armExtend(extendAfterMs(this.hooks.ttlMs()));
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.extendTimer);
    clearTimeout(this.expiryTimer);
  }

  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    const left = this.hooks.validUntil() - this.hooks.clock.now();
    this.expiryTimer = setTimeout(() => this.checkExpiry(), Math.max(0, left));
    this.expiryTimer.unref();
  }

  private checkExpiry(): void {
    if (this.stopped) return;
    if (this.hooks.validUntil() - this.hooks.clock.now() > 0) {
      this.armExpiry();
      return;
    }
    this.hooks.onLost('expired', this.lastError);
  }

  private armExtend(delayMs: number): void {
    clearTimeout(this.extendTimer);
    this.extendTimer = setTimeout(() => void this.runExtend(), delayMs);
    this.extendTimer.unref();
  }

  private async runExtend(): Promise<void> {
    if (this.stopped) return;
    const sentAt = this.hooks.clock.now();
    try {
      const outcome = await this.hooks.extend();
      if (this.stopped || outcome === 'lost') return;
      this.lastError = undefined;
      this.armExpiry();
      this.armExtend(Math.max(0, sentAt + extendAfterMs(this.hooks.ttlMs()) - this.hooks.clock.now()));
    } catch (error) {
      if (this.stopped) return;
      // A transient failure: try again soon, as long as the lease is still valid. The expiry timer
      // reports the loss if validity runs out first.
      this.lastError = error;
      const left = this.hooks.validUntil() - this.hooks.clock.now();
      if (left > 0) this.armExtend(extendRetryAfterMs(this.hooks.ttlMs(), left));
    }
  }
}
