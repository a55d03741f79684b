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

/**
 * The TTLs of a Redlock lock's calls that asked for more than its default and a minute
 * (`acquire({ ttlMs })`), by token: an attempt of such a call may be re-sent as late as its TTL, so
 * its release's tombstone is kept that long. Kept until that TTL has passed (a re-sent release must
 * keep the tombstone as long as the first did), whether or not the lease was released.
 */
export class LongCallTtls {
  private readonly byToken = new Map<string, { readonly ttlMs: number; readonly until: number }>();

  /** Notes an attempt of `token` asking for `ttlMs`, when that is longer than both. */
  note(token: string, ttlMs: number, defaultTtlMs: number): void {
    if (ttlMs <= Math.max(defaultTtlMs, TOMBSTONE_MIN_KEEP_MS)) return;
    const now = Date.now();
    for (const [noted, entry] of this.byToken) if (entry.until < now) this.byToken.delete(noted);
    this.byToken.set(token, { ttlMs, until: now + ttlMs });
  }

  /** The TTL `token`'s release tombstone follows: its call's, when longer than `ttlMs`. */
  of(token: string, ttlMs: number): number {
    return Math.max(this.byToken.get(token)?.ttlMs ?? 0, ttlMs);
  }
}
