import type { Clock } from '../clock.js';
import type { LockLostReason } from '../errors.js';
import { extendAfterMs, extendRetryAfterMs, timerDelayMs } from '../timing.js';

export interface WatchdogHooks {
  clock: Clock;
  autoExtend: boolean;
  ttlMs(): number;
  /** The lease's validity left now (≤ 0 once run out), measured as the lease measures it. */
  remainingMs(): number;
  /** One extension; 'lost' when Redis no longer holds the token. Rejects on a Redis error. */
  extend(): Promise<'extended' | 'lost'>;
  onLost(reason: LockLostReason, cause?: unknown): void;
  /** An automatic extension failed; retried in `retryInMs`, or not at all (no validity left). */
  onExtendFailed(error: unknown, retryInMs: number | undefined): void;
}

/**
 * Longest the expiry timer sleeps between two looks at the validity left. Timers run on the
 * monotonic clock, which stands still while the host is suspended; validity does not (it also
 * counts wall-clock time). Looking at least this often notices a resume within a second.
 */
const EXPIRY_RECHECK_MS = 1_000;

/**
 * Keeps one lease alive (when `autoExtend`) and notices when its validity runs out.
 *
 * A re-armed timer, not an interval: the next extension is planned from when the previous one
 * was sent, so a slow reply never stacks a second extension on top of one in flight. A failed
 * extension is retried while validity remains. The expiry timer fires even when nothing is
 * extended, so a lease without auto-extension still aborts its signal the moment it runs out.
 * Timers are unref()'d: a held lock never keeps the process alive by itself. The expiry timer looks
 * at least once a second, so a lease is lost within a second of a host resuming from a suspend.
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

  /** Reports the loss when validity has run out, else looks again later. The lease calls it too. */
  check(): void {
    if (this.stopped) return;
    if (this.hooks.remainingMs() > 0) {
      this.armExpiry();
      return;
    }
    this.hooks.onLost('expired', this.lastError);
  }

  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    const left = this.hooks.remainingMs();
    this.expiryTimer = setTimeout(() => this.check(), timerDelayMs(Math.min(left, EXPIRY_RECHECK_MS)));
    this.expiryTimer.unref();
  }

  private armExtend(delayMs: number): void {
    clearTimeout(this.extendTimer);
    this.extendTimer = setTimeout(() => void this.runExtend(), timerDelayMs(delayMs));
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
      const left = this.hooks.remainingMs();
      const retryInMs = left > 0 ? extendRetryAfterMs(this.hooks.ttlMs(), left) : undefined;
      this.hooks.onExtendFailed(error, retryInMs);
      if (retryInMs !== undefined) this.armExtend(retryInMs);
    }
  }
}
