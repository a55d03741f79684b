/**
 * The clock leases measure validity with. Monotonic on purpose: a wall-clock step (NTP, a VM resume)
 * must never make a lease look longer-lived than it is. Injected in tests.
 */
export interface Clock {
  /** Milliseconds from an arbitrary origin; never goes backwards. */
  now(): number;
}

export const monotonicClock: Clock = Object.freeze({ now: () => performance.now() });
