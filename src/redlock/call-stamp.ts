/**
 * Stamps for a Redlock kind's calls of one token, so a server can tell which of two calls was sent
 * first even when they reach it the other way round (issue 39: a client re-sent an attempt and its
 * release on a new connection after a reset one, the release first). Every stamp this process takes
 * is above the one before (a logical clock), and starts from the wall clock in microseconds, so
 * stamps of different processes are roughly ordered too (a `releaseToken()` from elsewhere). An
 * integer below 2^53: exact as a Lua number.
 */
let last = 0;

/** The next stamp: above every stamp this process took before, and at least the wall clock in µs. */
export function callStamp(): number {
  last = Math.max(last + 1, Date.now() * 1000);
  return last;
}

/**
 * How long a server keeps a release's tombstone at least: a client re-sends the calls of a reset
 * connection once it has reconnected, which may take longer than a short TTL, so the tombstone
 * outlives the TTL by far (the key is small: one per released token).
 */
export const TOMBSTONE_MIN_KEEP_MS = 60_000;

/** A release's tombstone: its stamp, taken now, kept the TTL of the calls it follows and at least a minute. */
export function releaseTombstone(ttlMs: number): { readonly stamp: number; readonly keepMs: number } {
  return { stamp: callStamp(), keepMs: Math.max(ttlMs, TOMBSTONE_MIN_KEEP_MS) };
}
