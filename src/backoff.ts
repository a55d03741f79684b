/** How a back-off spreads its delays: none, 50–100 % of the step (`half`), or 0–100 % (`full`). */
export type Jitter = 'none' | 'half' | 'full';

/** A back-off's steps: `firstMs`, doubling up to `maxMs`, with `jitter` drawn from `random`. */
export interface BackoffSchedule {
  readonly firstMs: number;
  readonly maxMs: number;
  readonly jitter?: Jitter;
  readonly random?: () => number;
}

/**
 * The one retry schedule of Locksmith: `firstMs`, doubling at each step up to `maxMs`, jittered so
 * callers that failed together do not retry together. Used for polling without pub/sub, re-sent
 * give-backs and releases, and a Redlock call's split votes. Pure: the random source is injected.
 */
export class Backoff {
  private step = 0;

  constructor(private readonly schedule: BackoffSchedule) {}

  /** How many delays were taken since the start (or the last `reset()`). */
  get steps(): number {
    return this.step;
  }

  /**
   * The next delay in ms; the one after it is twice as long (up to `maxMs`). `firstMs` replaces the
   * schedule's base for a caller whose unit varies (a split vote backs off in attempt durations).
   */
  next(firstMs: number = this.schedule.firstMs): number {
    const { maxMs, jitter = 'none', random = Math.random } = this.schedule;
    const stepMs = Math.min(maxMs, firstMs * 2 ** Math.min(this.step, 30));
    this.step += 1;
    if (jitter === 'half') return Math.max(1, Math.floor(stepMs * (0.5 + random() / 2)));
    if (jitter === 'full') return Math.floor(random() * stepMs);
    return stepMs;
  }

  /** Starts the schedule over (the failure it backed off from has passed). */
  reset(): void {
    this.step = 0;
  }
}
