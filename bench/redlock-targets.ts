/**
 * The targets of issue #12 (Redlock), checked against one run: at each client count, Locksmith's
 * RedlockMutex (defaults) against the fastest peer Redlock cell with no errors and no stuck client
 * (defaults or tuned), on the same three servers. Ratios within one run, not absolute rates.
 */
import type { Cell } from './run.js';

type Format = (value: number, digits?: number) => string;

/** The bar is set at 5 clients; the other counts are reported against the same bar. */
const TARGET_CLIENTS = 5;

export function printRedlockTargets(cells: readonly Cell[], fmt: Format): void {
  const redlock = cells.filter((c) => c.servers > 1 && c.csMs === 0);
  const ours = redlock.filter((c) => c.impl === 'locksmith-redlock-ioredis' && c.clients > 1);
  if (ours.length === 0) return;
  const lines: string[] = [];
  const check = (ok: boolean, text: string) => lines.push(`  ${ok ? 'met   ' : 'MISSED'} ${text}`);
  for (const cell of ours) {
    const name = `RedlockMutex ×${cell.clients}${cell.clients === TARGET_CLIENTS ? '' : ' (the issue sets the bar at 5)'}`;
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
  console.log('\nTargets of issue #12 (Redlock, 3 servers, empty critical section, this run):');
  console.log(lines.join('\n'));
}
