import { timerDelayMs } from './timing.js';

/** A wait that ends once its deadline, in real time, has passed. */
export interface Expiring {
  /** The checker's bookkeeping: when it ends, on `performance.now()`. Not for the wait's use. */
  due: number;
  /** The checker's bookkeeping: where it keeps this wait (-1 while not watched). Not for the wait's use. */
  slot: number;
  /** The wait's own timer while timers are mocked (see `watchFor`). Not for the wait's use. */
  own: OwnTimer | undefined;
  /** Its deadline passed: it is no longer watched. */
  expire(): void;
}

/** A timer and the function that clears it: the one of the timers that armed it. */
export interface OwnTimer {
  readonly timer: unknown;
  readonly clear: (timer: never) => void;
}

/** The timer functions a checker arms. */
export interface Timers {
  set(callback: () => void, ms: number): Timer;
  clear(timer: Timer): void;
}

export interface Timer {
  ref(): unknown;
  unref(): unknown;
}

/** The process's own timers, taken when this module loads, before any test can mock them. */
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

const realTimers: Timers = {
  set: (callback, ms) => realSetTimeout(callback, ms),
  clear: (timer) => realClearTimeout(timer as NodeJS.Timeout),
};

/**
 * Ends waits at their deadlines with ONE timer, instead of a `setTimeout` per call (a Timeout
 * object, its insertion into Node's timer lists, and a `clearTimeout` when the reply comes first,
 * which it nearly always does). Deadlines are in real time (`performance.now()`), whatever clock
 * the lock was given: a call is bounded by real milliseconds, as a timer per call bounded it.
 *
 * The timer is armed for the earliest deadline it knows of when armed, and is moved only by a wait
 * due earlier than that: a stream of calls with the same bound (the uncontended cycle) re-arms it
 * once per bound, not per call. When it fires it ends every wait whose deadline has passed and
 * re-arms for the earliest one left. No wait ends before its deadline; one may end up to about 1 ms
 * later than a timer of its own would have ended it (the timer fired a fraction of a millisecond
 * before the deadline by `performance.now()`, and was re-armed for the 1 ms left), plus Node's own
 * timer lateness. With nothing outstanding the timer is unref'd, so it never keeps a process alive,
 * and it is not re-armed once it fires with nothing to watch.
 *
 * Waits are kept in an array by slot (swap-remove): watching and unwatching allocate nothing.
 */
export class DeadlineChecker {
  private readonly waits: Expiring[] = [];
  private timer: Timer | undefined;
  /** The instant the timer fires at (Infinity: not armed). */
  private armedFor = Number.POSITIVE_INFINITY;
  /** Whether the timer keeps the process alive (only while a wait is outstanding). */
  private refed = false;

  constructor(
    /** Real time: `performance.now()` (tests inject their own). */
    private readonly time: { now(): number } = performance,
    /** The timers it arms and clears: always the same pair, so a timer is cleared by its own kind. */
    private readonly timers: Timers = realTimers,
  ) {}

  /** How many waits are outstanding (tests). */
  get outstanding(): number {
    return this.waits.length;
  }

  /** Whether the timer is armed and keeps the process alive (tests). */
  get keepsAlive(): boolean {
    return this.timer !== undefined && this.refed;
  }

  /** Whether the timer is armed at all, referenced or not (tests). */
  get armed(): boolean {
    return this.timer !== undefined;
  }

  /** Watches `wait` until its `due` instant (on this checker's time). */
  watch(wait: Expiring): void {
    wait.slot = this.waits.length;
    this.waits.push(wait);
    // Only a wait due before the armed timer moves it. One due no earlier needs only a ref: when
    // the timer fires (even one already past due, its callback still queued behind I/O) `check`
    // re-arms it for the earliest wait left.
    if (wait.due < this.armedFor) this.arm(wait.due);
    else if (!this.refed) {
      this.refed = true;
      this.timer?.ref();
    }
  }

  /** Stops watching `wait` (its call settled, or it was aborted); a no-op for one not watched. */
  unwatch(wait: Expiring): void {
    const slot = wait.slot;
    if (slot < 0 || this.waits[slot] !== wait) return;
    const last = this.waits.pop() as Expiring;
    if (last !== wait) {
      this.waits[slot] = last;
      last.slot = slot;
    }
    wait.slot = -1;
    if (this.waits.length === 0 && this.refed) {
      this.refed = false;
      this.timer?.unref();
    }
  }

  private arm(due: number): void {
    if (this.timer) this.timers.clear(this.timer);
    this.armedFor = due;
    this.refed = true;
    this.timer = this.timers.set(this.check, timerDelayMs(due - this.time.now()));
  }

  /** The timer fired: ends the waits past their deadline, re-arms for the earliest one left. */
  private readonly check = (): void => {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.refed = false;
    const now = this.time.now();
    // Collected first: an expiry settles a promise, and unwatching reorders the array.
    const expired = this.waits.filter((wait) => wait.due <= now);
    for (const wait of expired) {
      this.unwatch(wait);
      wait.expire();
    }
    // Those left (an expiry may have watched new ones, and armed the timer for them).
    let next = Number.POSITIVE_INFINITY;
    for (const wait of this.waits) if (wait.due < next) next = wait.due;
    if (next < this.armedFor) this.arm(next);
  };
}

/** The one checker of the process, in real time, on the real timers. */
export const deadlines = new DeadlineChecker();

/**
 * Watches `wait` for `delayMs` real milliseconds from now (rounded up, at most Node's longest
 * timer, as `setTimeout` takes it), then expires it. While a test has mocked the timers
 * (`setTimeout` is not the one this module loaded with), the wait gets a timer of its own from the
 * current `setTimeout` instead, which expires it when it fires: a mocked clock's `tick` ends it, as
 * it ended a call before the shared checker.
 */
export function watchFor(wait: Expiring, delayMs: number): void {
  const ms = timerDelayMs(delayMs);
  if (globalThis.setTimeout === realSetTimeout) {
    wait.due = performance.now() + ms;
    deadlines.watch(wait);
    return;
  }
  const clear = globalThis.clearTimeout as (timer: never) => void;
  const timer = globalThis.setTimeout(() => {
    wait.own = undefined;
    wait.expire();
  }, ms);
  wait.own = { timer, clear };
}

/** Stops watching `wait`, however it was watched; a no-op for one not watched. */
export function unwatch(wait: Expiring): void {
  const own = wait.own;
  if (own) {
    wait.own = undefined;
    own.clear(own.timer as never);
  } else if (wait.slot >= 0) deadlines.unwatch(wait);
}
