import type { Clock } from './clock.js';
import { timerDelayMs } from './timing.js';

/** A wait the checker ends when its deadline (on the checker's clock) has passed. */
export interface Expiring {
  /** On the checker's clock. */
  readonly deadline: number;
  /** The checker's bookkeeping: where it keeps this wait (-1 while not watched). Not for the wait's use. */
  slot: number;
  /** Its deadline passed: the checker already stopped watching it. */
  expire(): void;
}

/** The timer functions the checker arms (the global ones, looked up at each use so test mocks apply). */
export interface Timers {
  set(callback: () => void, ms: number): Timer;
  clear(timer: Timer): void;
}

export interface Timer {
  ref(): unknown;
  unref(): unknown;
}

const globalTimers: Timers = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/**
 * Ends the waits of every round trip on one clock at their deadlines with ONE timer, instead of a
 * `setTimeout` per call (a Timeout object, its insertion into Node's timer lists, and a
 * `clearTimeout` when the reply comes first, which it nearly always does).
 *
 * The timer is armed for the earliest deadline it knows of when armed, and is moved only by a wait
 * due earlier than that: a stream of calls with the same bound (the uncontended cycle) re-arms it
 * once per bound, not per call. When it fires it ends every wait whose deadline has passed and
 * re-arms for the earliest one left, so no wait ends before its deadline or later than its deadline
 * plus Node's own timer lateness: the bounds are the ones `setTimeout` gave (docs/api.md,
 * `replyTimeoutMs`). With nothing outstanding the timer is unref'd, so it never keeps a process
 * alive, and it is not re-armed once it fires with nothing to watch.
 *
 * Waits are kept in an array by slot (swap-remove): watching and unwatching allocate nothing.
 */
export class DeadlineChecker {
  private readonly waits: Expiring[] = [];
  private timer: Timer | undefined;
  /** The clock instant the timer fires at (Infinity: not armed). */
  private armedFor = Number.POSITIVE_INFINITY;
  /** Whether the timer keeps the process alive (only while a wait is outstanding). */
  private refed = false;
  /** The timers the current one came from: a test that mocks or restores them re-arms it. */
  private armedWith: unknown;

  constructor(
    private readonly clock: Clock,
    private readonly timers: Timers = globalTimers,
    /** Tells the global timers apart when a test replaces them (`mock.timers`). */
    private readonly timersNow: () => unknown = () => setTimeout,
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

  watch(wait: Expiring): void {
    wait.slot = this.waits.length;
    this.waits.push(wait);
    // A timer due later than this wait, already overdue (its callback still queued behind I/O, or
    // lost to a mock that was reset) or made by other timers is re-armed; else it only needs a ref.
    if (wait.deadline < this.armedFor || this.armedWith !== this.timersNow()) this.arm(wait.deadline);
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

  private arm(deadline: number): void {
    if (this.timer) this.timers.clear(this.timer);
    this.armedFor = deadline;
    this.armedWith = this.timersNow();
    this.refed = true;
    this.timer = this.timers.set(this.check, timerDelayMs(deadline - this.clock.now()));
  }

  /** The timer fired: ends the waits past their deadline, re-arms for the earliest one left. */
  private readonly check = (): void => {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.refed = false;
    const now = this.clock.now();
    // Collected first: an expiry settles a promise, and unwatching reorders the array.
    const expired = this.waits.filter((wait) => wait.deadline <= now);
    for (const wait of expired) {
      this.unwatch(wait);
      wait.expire();
    }
    // Those left (an expiry may have watched new ones, and armed the timer for them).
    let next = Number.POSITIVE_INFINITY;
    for (const wait of this.waits) if (wait.deadline < next) next = wait.deadline;
    if (next < this.armedFor) this.arm(next);
  };
}

/** The checker of each clock in use (usually one: `monotonicClock`; tests inject their own). */
const checkers = new WeakMap<Clock, DeadlineChecker>();
let lastClock: Clock | undefined;
let lastChecker: DeadlineChecker | undefined;

/** The checker that ends waits measured on `clock`. */
export function checkerFor(clock: Clock): DeadlineChecker {
  if (clock === lastClock) return lastChecker as DeadlineChecker;
  let checker = checkers.get(clock);
  if (!checker) {
    checker = new DeadlineChecker(clock);
    checkers.set(clock, checker);
  }
  lastClock = clock;
  lastChecker = checker;
  return checker;
}
