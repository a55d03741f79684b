/**
 * The targets of the kinds over three servers, checked against one run: at each client count,
 * Locksmith's cell (defaults) against the fastest peer cell of the same limit with no errors and
 * no stuck client (defaults or tuned), on the same three servers. Issue #12: the RedlockMutex;
 * issue 39: the RedlockSemaphore (limit 3). Ratios within one run, not absolute rates.
 */
import type { Cell } from './run.js';

type Format = (value: number, digits?: number) => string;

/** One kind's targets: its cell, its peers' limit, the client counts the issue sets the bar at. */
interface QuorumTargets {
  readonly title: string;
  readonly impl: string;
  readonly kind: string;
  readonly limit: number;
  readonly barClients: readonly number[];
}

const kinds: readonly QuorumTargets[] = [
  {
    title: 'Targets of issue #12 (Redlock, 3 servers, empty critical section, this run):',
    impl: 'locksmith-redlock-ioredis',
    kind: 'RedlockMutex',
    limit: 1,
    barClients: [5],
  },
  {
    title: 'Targets of issue 39 (RedlockSemaphore/3, 3 servers, empty critical section, this run):',
    impl: 'locksmith-redlock-semaphore-ioredis',
    kind: 'RedlockSemaphore',
    limit: 3,
    barClients: [5, 10],
  },
];

export function printRedlockTargets(cells: readonly Cell[], fmt: Format): void {
  for (const kind of kinds) printQuorumTargets(cells, fmt, kind);
}

function printQuorumTargets(cells: readonly Cell[], fmt: Format, kind: QuorumTargets): void {
  const redlock = cells.filter((c) => c.servers > 1 && c.csMs === 0 && c.limit === kind.limit);
  const ours = redlock.filter((c) => c.impl === kind.impl && c.clients > 1);
  if (ours.length === 0) return;
  const lines: string[] = [];
  const check = (ok: boolean, text: string) => lines.push(`  ${ok ? 'met   ' : 'MISSED'} ${text}`);
  const bar = kind.barClients.join(' and ');
  for (const cell of ours) {
    const name = `${kind.kind} ×${cell.clients}${kind.barClients.includes(cell.clients) ? '' : ` (the issue sets the bar at ${bar})`}`;
    const peers = redlock.filter(
      (c) => c.family === 'peer' && c.clients === cell.clients && c.errors === 0 && c.stuckClients === 0,
    );
    const best = peers.reduce<Cell | undefined>(
      (a, c) => (!a || c.acquisitionsPerS > a.acquisitionsPerS ? c : a),
      undefined,
    );
    if (best) {
      check(
        cell.acquisitionsPerS >= best.acquisitionsPerS,
        `${name}: ${fmt(cell.acquisitionsPerS)} acq/s vs best error-free peer ${best.impl} ${fmt(best.acquisitionsPerS)} (${fmt((100 * cell.acquisitionsPerS) / best.acquisitionsPerS, 0)}%; stretch 200%)`,
      );
      check(
        cell.waitMs.p99 <= best.waitMs.p99 / 2,
        `${name}: p99 wait ${fmt(cell.waitMs.p99, 1)} ms vs the peer's ${fmt(best.waitMs.p99, 1)} ms (≤ half)`,
      );
    }
    check(cell.jain >= 0.95, `${name}: Jain ${fmt(cell.jain, 3)} (≥ 0.95)`);
    check(
      cell.errors === 0 && cell.stuckClients === 0 && cell.violations === 0,
      `${name}: ${cell.errors} errors, ${cell.stuckClients} stuck clients, ${cell.violations} violations (0 each); ${fmt(cell.redisCommandsPerAcquisition, 1)} Redis commands and ${fmt(cell.roundTripsPerAcquisition, 2)} round trips per acquisition`,
    );
  }
  console.log(`\n${kind.title}`);
  console.log(lines.join('\n'));
}
