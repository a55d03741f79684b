/**
 * The pure rules of a Redlock quorum: its size, when a fan-out is decided, how long until a quorum
 * can be free, and the back-off after a split vote. No I/O: unit-tested with plain numbers.
 */
import type { NodeOutcome } from '../errors.js';

/** ⌊N/2⌋ + 1: any two quorums of N nodes share at least one node. */
export function quorumSize(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/**
 * Whether the servers' own limits already keep at most `limit` permits held through a quorum, so a
 * RedlockSemaphore needs no read after a grant: each server holds at most `limit` permits and a
 * quorum's holder holds its permits on `quorum` of the `nodes` servers, so holders through a
 * quorum hold at most ⌊nodes × limit / quorum⌋ permits in all, which is at most `limit` exactly
 * when limit × (nodes − quorum) < quorum. With 3 or 5 servers: limit 1 (the RedlockMutex's own
 * argument); with 4: up to 2; with 2 (a quorum of both): any.
 */
export function grantsKeepLimit(limit: number, nodes: number, quorum = quorumSize(nodes)): boolean {
  return limit * (nodes - quorum) < quorum;
}

/** How many nodes answered each way so far. */
export interface Tally {
  readonly won: number;
  readonly held: number;
  /** Errors and timeouts: nodes that could not be asked. */
  readonly failed: number;
}

export function tally(outcomes: readonly NodeOutcome[]): Tally {
  let won = 0;
  let held = 0;
  let failed = 0;
  for (const { outcome } of outcomes) {
    if (outcome === 'won') won += 1;
    else if (outcome === 'held') held += 1;
    else if (outcome === 'error' || outcome === 'timed-out') failed += 1;
  }
  return { won, held, failed };
}

/**
 * What a fan-out to `nodes` nodes has settled, given the answers so far: `won` once a quorum said
 * yes; `held` once so many said no that no quorum can say yes (contention: someone else holds it);
 * `no-quorum` once failures (with the noes) leave too few nodes for a quorum; `open` while the
 * nodes still to answer could tip it either way.
 */
export function verdict(t: Tally, nodes: number): 'won' | 'held' | 'no-quorum' | 'open' {
  const quorum = quorumSize(nodes);
  if (t.won >= quorum) return 'won';
  const cannotWin = nodes - quorum + 1;
  if (t.held >= cannotWin) return 'held';
  if (t.held + t.failed >= cannotWin) return 'no-quorum';
  return 'open';
}

/**
 * How long until a quorum can be free, at the earliest, given the wait bounds (the holders' time
 * left, ms) of the nodes found held and how many nodes there are: the lock needs `quorum` free
 * nodes, so that many held ones beyond the `nodes − held` free ones must expire first.
 * -1 when nothing bounds it (a bound of -1 on a node that must free).
 */
export function quorumFreeInMs(heldBoundsMs: readonly number[], nodes: number): number {
  const needed = quorumSize(nodes) - (nodes - heldBoundsMs.length);
  if (needed <= 0) return 0;
  const sorted = heldBoundsMs.map((b) => (b < 0 ? Number.POSITIVE_INFINITY : b)).sort((a, b) => a - b);
  const bound = sorted[needed - 1] as number;
  return Number.isFinite(bound) ? bound : -1;
}

/**
 * The longest back-off after a split vote (this attempt won some nodes, another attempt the rest),
 * however many came in a row (ms). The wait is random, so the contenders stop colliding, and grows
 * with the splits in a row of one call (2^splits times the attempt's own duration, at least 1 ms),
 * so a crowd spreads out over several round trips.
 */
export const SPLIT_BACKOFF_MAX_MS = 50;
