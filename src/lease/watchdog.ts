import type { Clock } from '../clock.js';
import type { LockLostReason } from '../errors.js';
import { extendAfterMs, extendRetryAfterMs, timerDelayMs } from '../timing.js';

/**
 * @internal What the watchdog calls back into: its lease (`Lease` implements it with internal methods, so a
 * lease costs no hook object and closures of its own).
 */
export interface WatchdogHooks {
  /** The lease's TTL now (the latest one, after an extension). */
  watchedTtlMs(): number;
  /** The lease's validity left now (≤ 0 once run out), measured as the lease measures it. */
  watchedRemainingMs(): number;
  /** One extension; 'lost' when Redis no longer holds the token. Rejects on a Redis error. */
  extendAutomatically(): Promise<'extended' | 'lost'>;
  onWatchLost(reason: LockLostReason, cause?: unknown): void;
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
 *
 * An extension due after the expiry timer's next look is not armed yet: that look arms it, for the
 * same instant. Most leases are released within a second, and then never had a second timer (one
 * timer per lease, not two, on the hot path of a busy lock).
 */
export class Watchdog {
  private extendTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  /** When the expiry timer looks next (on `clock`). */
  private expiryAt = Number.NEGATIVE_INFINITY;
  /** When the next extension is due, while it waits for the expiry timer's look to be armed. */
  private extendAt: number | undefined;
  private stopped = false;
  private lastError: unknown;

  constructor(
    private readonly hooks: WatchdogHooks,
    private readonly clock: Clock,
    private readonly autoExtend: boolean,
  ) {}

  start(sentAt: number): void {
    this.armExpiry();
    if (this.autoExtend) {
      this.armExtend(Math.max(0, sentAt + extendAfterMs(this.hooks.watchedTtlMs()) - this.clock.now()));
    }
  }

  /** After a manual extension: validity moved, and the next automatic one can wait longer. */
  rescheduleAfterExtend(): void {
    if (this.stopped) return;
    this.armExpiry();
    if (this.autoExtend) this.armExtend(extendAfterMs(this.hooks.watchedTtlMs()));
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.extendTimer);
    clearTimeout(this.expiryTimer);
  }

  /** Reports the loss when validity has run out, else looks again later. The lease calls it too. */
  check(): void {
    if (this.stopped) return;
    if (this.hooks.watchedRemainingMs() > 0) {
      this.armExpiry();
      return;
    }
    this.hooks.onWatchLost('expired', this.lastError);
  }

  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    const delayMs = timerDelayMs(Math.min(this.hooks.watchedRemainingMs(), EXPIRY_RECHECK_MS));
    const now = this.clock.now();
    this.expiryTimer = setTimeout(() => this.check(), delayMs);
    this.expiryTimer.unref();
    this.expiryAt = now + delayMs;
    // An extension due before this look (or with it) is armed now, for its own instant.
    const extendAt = this.extendAt;
    if (extendAt !== undefined && extendAt <= this.expiryAt) {
      this.extendAt = undefined;
      this.startExtendTimer(extendAt - now);
    }
  }

  /** The next extension in `delayMs`: armed now when due by the expiry timer's next look, else by that look. */
  private armExtend(delayMs: number): void {
    clearTimeout(this.extendTimer);
    this.extendTimer = undefined;
    const now = this.clock.now();
    if (now + delayMs <= this.expiryAt) {
      this.extendAt = undefined;
      this.startExtendTimer(delayMs);
    } else {
      this.extendAt = now + delayMs;
    }
  }

  private startExtendTimer(delayMs: number): void {
    this.extendTimer = setTimeout(() => void this.runExtend(), timerDelayMs(delayMs));
    this.extendTimer.unref();
  }

  private async runExtend(): Promise<void> {
    if (this.stopped) return;
    const sentAt = this.clock.now();
    try {
      const outcome = await this.hooks.extendAutomatically();
      if (this.stopped || outcome === 'lost') return;
      this.lastError = undefined;
      this.armExpiry();
      this.armExtend(Math.max(0, sentAt + extendAfterMs(this.hooks.watchedTtlMs()) - this.clock.now()));
    } catch (error) {
      if (this.stopped) return;
      // A transient failure: try again soon, as long as the lease is still valid. The expiry timer
      // reports the loss if validity runs out first.
      this.lastError = error;
      const left = this.hooks.watchedRemainingMs();
      const retryInMs = left > 0 ? extendRetryAfterMs(this.hooks.watchedTtlMs(), left) : undefined;
      this.hooks.onExtendFailed(error, retryInMs);
      if (retryInMs !== undefined) this.armExtend(retryInMs);
    }
  }
}
