/**
 * Pure timing rules shared by every primitive: lease validity and retry delays.
 * Kept free of I/O so they are unit-tested with plain numbers.
 */

/**
 * Clock drift allowance for a TTL, as in the Redlock paper: a fraction of the TTL plus 2 ms for
 * the granularity of Redis' own expiry.
 */
export function driftMs(ttlMs: number, driftFactor: number): number {
  return Math.ceil(ttlMs * driftFactor) + 2;
}

/**
 * The least validity a lease must start with to be usable at all: with less, a grant is stale by
 * the time its reply has been read, so acquisition would spin (burning fencing tokens) and a lease
 * would be lost as soon as it is handed out.
 */
export const MIN_VALIDITY_MS = 10;

/**
 * The smallest `ttlMs` that leaves `MIN_VALIDITY_MS` of validity after the drift margin (13 ms for
 * the default driftFactor 0.01, 24 ms for 0.5). Validity grows with the TTL for any factor ≤ 0.5,
 * so the first TTL that is enough is the minimum.
 */
export function minTtlMs(driftFactor: number): number {
  let ttlMs = MIN_VALIDITY_MS + 1;
  while (ttlMs - driftMs(ttlMs, driftFactor) < MIN_VALIDITY_MS) ttlMs += 1;
  return ttlMs;
}

/**
 * The monotonic instant until which a lease is known to be held. Measured from when the request was
 * *sent*: the server set the TTL some time after that, so this errs on the safe side.
 */
export function validUntil(sentAt: number, ttlMs: number, driftFactor: number): number {
  return sentAt + ttlMs - driftMs(ttlMs, driftFactor);
}

/**
 * Milliseconds of validity a grant has left (≤ 0: none) once `elapsedMs` have passed since it was
 * sent: the TTL less the drift margin less that, as its lease will count it.
 */
export function validityLeftMs(ttlMs: number, driftFactor: number, elapsedMs: number): number {
  return ttlMs - driftMs(ttlMs, driftFactor) - elapsedMs;
}

/**
 * How long to wait before the next attempt: the holder's remaining TTL bounds it (the lock is free
 * by then at the latest), an optional fixed retry delay bounds it, and so does the time left.
 * Jitter spreads waiters that woke together.
 */
export function nextWaitMs(input: {
  holderPttlMs: number;
  retryDelayMs: number | undefined;
  jitterMs: number;
  remainingMs: number;
  random: () => number;
}): number {
  const { holderPttlMs, retryDelayMs, jitterMs, remainingMs, random } = input;
  // PTTL 0 is a lock in its last millisecond (Redis rounds down): it is free in about 1 ms. A key
  // without expiry reports -1; a key that vanished meanwhile, -2. Neither tells us a bound, so fall
  // back to the retry delay (or a short default) and try again.
  const holderBound = holderPttlMs >= 0 ? Math.max(1, holderPttlMs) : (retryDelayMs ?? 50);
  const base = Math.min(holderBound, retryDelayMs ?? Number.POSITIVE_INFINITY);
  const jitter = jitterMs > 0 ? Math.floor(random() * (jitterMs + 1)) : 0;
  return Math.max(0, Math.min(base + jitter, remainingMs));
}

/** When the watchdog should next extend: a third of the TTL after the last extension was sent. */
export function extendAfterMs(ttlMs: number): number {
  return Math.max(1, Math.floor(ttlMs / 3));
}

/** After a failed extension, retry soon, but not so soon that a flapping link becomes a flood. */
export function extendRetryAfterMs(ttlMs: number, remainingValidityMs: number): number {
  return Math.max(1, Math.min(Math.floor(ttlMs / 10), Math.floor(remainingValidityMs / 2)));
}

/** The longest a Node timer can wait; longer waits end early and the caller waits again. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * A timer delay in whole milliseconds, rounded up, within what a Node timer takes. Node keeps one
 * timer list per distinct delay, so the fractional delays that `performance.now()` arithmetic
 * gives made a new list (and a priority-queue insertion) for every timer; libuv's clock counts
 * whole milliseconds anyway, so rounding up moves no timer by a tick.
 */
export function timerDelayMs(ms: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(ms)));
}
