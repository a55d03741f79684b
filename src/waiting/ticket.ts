import { canHear, type WakeChannel } from './wake.js';

/**
 * How often, at least, a call queued without a channel asks again: a lock handed to it silently
 * stays idle until it does.
 */
export const SILENT_POLL_MS = 50;

/**
 * The longest an entry queued without a channel lives unrenewed. Nothing tells a release that such a
 * waiter is gone (no subscriber count to read), so a dead one may be handed the lock until its
 * entry expires; the waiter renews it with every poll, far more often than this.
 */
export const SILENT_ENTRY_TTL_MS = 1_000;

/** One queue's part of an attempt: the channel its hand-off is published on, and its entry's life. */
export interface QueueEntry {
  /** Empty: hand-offs to this waiter are silent (never skipped as gone); it must ask to find them. */
  readonly grantChannel: string;
  /** How long the entry lives unrenewed, in ms; 0: do not queue (a single try). */
  readonly entryTtlMs: number;
}

/**
 * One acquire call's entries in the queues it waits in (one queue, or one line per Redlock node):
 * how long each attempt's entry lives, whether it is queued with a channel or silently, and when the
 * call must wake to renew it. Shared by every kind that queues its waiters.
 *
 * A waiter that will not hear its hand-off (it does not listen, `wakeOnRelease: false`, or its
 * SUBSCRIBE failed) is queued without a channel, for at most `SILENT_ENTRY_TTL_MS`, and asks again
 * every `SILENT_POLL_MS`: with a channel, a Mutex would skip it as gone at every hand-off, and a
 * FairMutex would hand it the lock to sit idle until its timed wait ended. Once queued silently, a
 * entry may keep that for the rest of the call (a renewal does not change its channel), so the
 * call keeps the silent pace.
 */
export class Ticket {
  private silent = false;
  private entryTtlMs = 0;
  private remainingMs = 0;

  constructor(
    /** Until when the call may queue (its deadline); undefined: it never queues (a single try). */
    private readonly joinUntil: number | undefined,
    /** How long an entry lives unrenewed (the kind's `waiterTtlMs`). */
    private readonly waiterTtlMs: number,
    /** Whether the call listens for its hand-off (`wakeOnRelease`). */
    private readonly listening: boolean,
  ) {}

  /** Starts an attempt sent at `sentAt`: its entries live until the deadline, `waiterTtlMs` at most. */
  join(sentAt: number): void {
    if (this.joinUntil === undefined) {
      this.entryTtlMs = 0;
      return;
    }
    this.remainingMs = this.joinUntil - sentAt;
    this.entryTtlMs = Math.max(1, Math.ceil(Math.min(this.remainingMs, this.waiterTtlMs)));
  }

  /** The attempt's entry in the queue whose hand-offs come on `channel`. */
  entry(channel: WakeChannel): QueueEntry {
    if (this.listening && canHear(channel))
      return { grantChannel: channel.channel, entryTtlMs: this.entryTtlMs };
    if (this.entryTtlMs > 0) this.silent = true;
    return { grantChannel: '', entryTtlMs: Math.min(this.entryTtlMs, SILENT_ENTRY_TTL_MS) };
  }

  /** Whether the attempt queued: its entry outlives it, so a call that gives up must leave. */
  get queued(): boolean {
    return this.entryTtlMs > 0;
  }

  /**
   * When the call must wake to renew its entries: at the silent pace once a hand-off to it may be
   * silent, before an entry shorter than the call's time left expires, else never.
   */
  renewInMs(): number {
    if (this.entryTtlMs <= 0) return Number.POSITIVE_INFINITY;
    if (this.silent) return SILENT_POLL_MS;
    if (this.entryTtlMs < this.remainingMs) return Math.max(1, Math.floor(this.entryTtlMs / 3));
    return Number.POSITIVE_INFINITY;
  }
}
