/**
 * The clocks leases measure validity with. Injected in tests.
 *
 * `now()` is monotonic: a wall-clock step (NTP) never makes a lease look longer-lived than it is.
 * But a monotonic clock (`performance.now()`, CLOCK_MONOTONIC) stands still while the host or VM is
 * suspended, and Redis' keys do not. So a lease counts validity down by whichever of the two moved
 * further since its reference instant: a suspend (wall moves, monotonic does not) or a wall clock
 * stepped forward only shortens validity, the safe side; a wall clock stepped back is ignored,
 * because the monotonic one still moves.
 */
export interface Clock {
  /** Milliseconds from an arbitrary origin; never goes backwards. */
  now(): number;
  /**
   * Wall-clock milliseconds (`Date.now()` scale), which keep moving while the host is suspended.
   * Optional: without it, validity is measured by `now()` alone.
   */
  wallNow?(): number;
}

export const monotonicClock: Clock = Object.freeze({
  now: () => performance.now(),
  wallNow: () => Date.now(),
});

/** One instant read on both clocks, so time elapsed since it can be measured by either. */
export interface Instant {
  readonly mono: number;
  readonly wall: number | undefined;
}

export function instantOf(clock: Clock): Instant {
  return { mono: clock.now(), wall: clock.wallNow?.() };
}

/**
 * Milliseconds since `since`, by whichever clock moved further: the monotonic one (immune to a
 * wall clock stepped back) or the wall one (which, unlike the monotonic one, counts a suspend).
 */
export function elapsedSince(clock: Clock, since: Instant): number {
  const monotonic = clock.now() - since.mono;
  const wallNow = clock.wallNow?.();
  if (wallNow === undefined || since.wall === undefined) return monotonic;
  return Math.max(monotonic, wallNow - since.wall);
}
