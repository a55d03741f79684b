/** Pure summaries of one benchmark cell (unit-free helpers, no I/O). */

export interface Acquisition {
  /** The acquirer (a loop): one per process in the N × 1 cells, C per process in the P × C cells. */
  readonly client: number;
  /** The acquirer's process (default: `client`, one acquirer per process). */
  readonly process?: number;
  readonly calledAt: number;
  readonly enteredAt: number;
  readonly leftAt: number;
}

/** Nearest-rank percentile of sorted values (0 < p ≤ 100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** Jain's fairness index: 1 when every client got the same share, 1/n when one got everything. */
export function jainIndex(counts: readonly number[]): number {
  const sum = counts.reduce((a, b) => a + b, 0);
  const squares = counts.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? Number.NaN : (sum * sum) / (counts.length * squares);
}

export interface OrderStats {
  /** Critical sections that began while `limit` others (1 for a lock) had not ended. */
  readonly violations: number;
  /** Share of acquisitions that went to the acquirer that held the lock just before. */
  readonly sameHolderShare: number;
  /** Share of acquisitions that went to the process that held the lock just before (any of its acquirers). */
  readonly sameProcessShare: number;
  /** Share of acquisitions granted after a later caller had already been granted. */
  readonly overtakenShare: number;
}

export function orderStats(acquisitions: readonly Acquisition[], limit = 1): OrderStats {
  const byEntry = [...acquisitions].sort((a, b) => a.enteredAt - b.enteredAt);
  let violations = 0;
  let same = 0;
  let sameProcess = 0;
  let overtaken = 0;
  /** Exits of the critical sections entered so far that may still be running. */
  let inside: number[] = [];
  let latestCall = Number.NEGATIVE_INFINITY;
  byEntry.forEach((a, i) => {
    inside = inside.filter((leftAt) => leftAt > a.enteredAt);
    if (inside.length >= limit) violations += 1;
    inside.push(a.leftAt);
    const previous = byEntry[i - 1];
    if (previous && previous.client === a.client) same += 1;
    if (previous && (previous.process ?? previous.client) === (a.process ?? a.client)) sameProcess += 1;
    if (latestCall > a.calledAt) overtaken += 1;
    latestCall = Math.max(latestCall, a.calledAt);
  });
  const n = byEntry.length;
  return {
    violations,
    sameHolderShare: n > 1 ? same / (n - 1) : Number.NaN,
    sameProcessShare: n > 1 ? sameProcess / (n - 1) : Number.NaN,
    overtakenShare: n > 0 ? overtaken / n : Number.NaN,
  };
}
