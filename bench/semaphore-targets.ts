/**
 * The targets of issue #11 (Semaphores), checked against one run: at each client count, Locksmith's
 * Semaphore against the best peer semaphore (redis-semaphore's, defaults or tuned), with fairness and
 * no polling. Ratios within one run, not absolute rates.
 */
import type { Cell } from './run.js';

type Format = (value: number, digits?: number) => string;

export function printSemaphoreTargets(
  cells: readonly Cell[],
  fmt: Format,
  pct: (value: number) => string,
): void {
  // One server: the semaphores over three servers have their own targets (redlock-targets.ts).
  const semaphores = cells.filter((c) => c.limit > 1 && c.csMs === 0 && c.servers === 1);
  const ours = semaphores.filter((c) => c.family === 'locksmith');
  if (ours.length === 0) return;
  const lines: string[] = [];
  const check = (ok: boolean, text: string) => lines.push(`  ${ok ? 'met   ' : 'MISSED'} ${text}`);
  for (const cell of ours.filter((c) => c.clients > 1)) {
    const peers = semaphores.filter((c) => c.family === 'peer' && c.clients === cell.clients);
    const best = peers.reduce<Cell | undefined>(
      (a, c) => (!a || c.acquisitionsPerS > a.acquisitionsPerS ? c : a),
      undefined,
    );
    const name = `${cell.impl} ×${cell.clients}`;
    if (best)
      check(
        cell.acquisitionsPerS >= best.acquisitionsPerS,
        `${name}: ${fmt(cell.acquisitionsPerS)} acq/s vs best peer ${best.impl} ${fmt(best.acquisitionsPerS)}`,
      );
    check(cell.jain >= 0.99, `${name}: Jain ${fmt(cell.jain, 3)} (≥ 0.99)`);
    check(
      cell.roundTripsPerAcquisition <= 2.2,
      `${name}: ${fmt(cell.roundTripsPerAcquisition, 2)} round trips per acquisition (≤ 2.2: no polling); ${fmt(cell.redisCommandsPerAcquisition, 1)} Redis commands; overtaken ${pct(cell.overtakenShare)}`,
    );
  }
  check(
    ours.every((c) => c.violations === 0 && c.errors === 0),
    `Locksmith semaphores: ${ours.reduce((a, c) => a + c.violations, 0)} more-than-limit violations, ${ours.reduce((a, c) => a + c.errors, 0)} errors`,
  );
  console.log('\nTargets of issue #11 (semaphores, limit > 1, empty critical section, this run):');
  console.log(lines.join('\n'));
}
