/**
 * Issue #22's sheet, from one run: each Locksmith kind's uncontended step (the one-client cell, the
 * 1,000-key cell, Redis calls and Redis CPU per cycle, acquire p50) beside the fastest peer of its
 * kind in the same run (single-server locks, semaphores, Redlocks over three servers). Ratios within
 * one run, not absolute rates. `bench/cost-sheet.ts` breaks the same cycle down by command, client
 * CPU and bytes allocated.
 */
import type { Cell } from './run.js';

type Format = (value: number, digits?: number) => string;

/** The same kind: holders at once (a lock or a semaphore), servers, read-write or not. */
const sameKind = (a: Cell, b: Cell) =>
  a.limit > 1 === b.limit > 1 && a.servers === b.servers && !a.readWrite === !b.readWrite;

export function printKindCosts(
  cells: readonly Cell[],
  multiKey: readonly { impl: string; cyclesPerS: number }[],
  fmt: Format,
): void {
  const single = cells.filter((c) => c.clients === 1 && c.csMs === 0);
  const ours = single.filter((c) => c.family === 'locksmith' && !c.impl.includes('failfast'));
  if (ours.length === 0) return;
  const keys = (impl: string) => multiKey.find((m) => m.impl === impl)?.cyclesPerS;
  const ratio = (a: number | undefined, b: number | undefined) =>
    a !== undefined && b !== undefined && b > 0 ? `${fmt(a / b, 2)}×` : '—';
  const pair = (a: number | undefined, b: number | undefined, digits = 0) =>
    `${a === undefined ? '—' : fmt(a, digits)} / ${b === undefined ? '—' : fmt(b, digits)}`;
  console.log(
    '\nThe uncontended step per kind (issue #22): Locksmith / the fastest peer of its kind at one client, this run',
  );
  console.log(
    '| kind | fastest peer | 1 client cycles/s | ratio | 1,000 keys cycles/s | ratio | Redis calls / cycle | Redis CPU µs / cycle | acquire p50 ms |',
  );
  console.log('|:--|:--|--:|--:|--:|--:|--:|--:|--:|');
  for (const cell of ours) {
    const peer = single
      .filter((c) => c.family === 'peer' && sameKind(c, cell))
      .reduce<Cell | undefined>((a, c) => (!a || c.acquisitionsPerS > a.acquisitionsPerS ? c : a), undefined);
    const cycles = (c: Cell) => c.redisCommandsPerAcquisition;
    console.log(
      `| ${cell.label} | ${peer?.impl ?? '—'} | ${pair(cell.acquisitionsPerS, peer?.acquisitionsPerS)} | ` +
        `${ratio(cell.acquisitionsPerS, peer?.acquisitionsPerS)} | ${pair(keys(cell.impl), peer && keys(peer.impl))} | ` +
        `${ratio(keys(cell.impl), peer && keys(peer.impl))} | ${pair(cycles(cell), peer && cycles(peer), 1)} | ` +
        `${pair(cell.cpuUsPerAcquisition.redis, peer?.cpuUsPerAcquisition.redis)} | ` +
        `${pair(cell.waitMs.p50, peer?.waitMs.p50, 3)} |`,
    );
  }
}
