/**
 * Charts of a bench run, from its JSON (bench/results/*.json): acquisitions/s against clients per
 * library, the wait distribution (p50, p99, max) per library, and the P × C cells. `npm run bench`
 * writes them beside its JSON; docs/performance.md embeds the ones in docs/charts/, regenerated
 * from a run's JSON with:
 *
 *   node --import tsx bench/charts.ts bench/results/<run>.json docs/charts
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { barChart, lineChart } from './svg.js';

/** The fields of a bench cell the charts read (bench/run.ts `Cell`). */
interface ChartCell {
  readonly label: string;
  readonly tuned: boolean;
  readonly limit: number;
  readonly servers: number;
  readonly clients: number;
  readonly acquirersPerProcess: number;
  readonly csMs: number;
  readonly acquisitionsPerS: number;
  readonly waitMs: { readonly p50: number; readonly p99: number; readonly max: number };
}

export interface BenchResults {
  readonly startedAt: string;
  readonly cells: readonly ChartCell[];
  readonly pxcCells: readonly ChartCell[];
}

/** One lock, one server, one acquirer per process, empty critical section: the libraries side by side. */
const comparable = (cell: ChartCell) =>
  cell.csMs === 0 && cell.limit === 1 && cell.servers === 1 && cell.acquirersPerProcess === 1;

export function charts(results: BenchResults): Record<string, string> {
  const when = results.startedAt.slice(0, 10);
  const cells = results.cells.filter(comparable);
  const labels = [...new Set(cells.map((cell) => cell.label))];
  const clients = [...new Set(cells.map((cell) => cell.clients))].sort((a, b) => a - b);
  const find = (label: string, n: number) => cells.find((cell) => cell.label === label && cell.clients === n);
  const most = clients.at(-1);
  const out: Record<string, string> = {};
  if (cells.length > 0) {
    out['acquisitions-by-clients.svg'] = lineChart(
      `Acquisitions/s on one contended lock (${when})`,
      clients.map(String),
      'client processes',
      'acquisitions/s',
      labels.map((label) => ({ name: label, values: clients.map((n) => find(label, n)?.acquisitionsPerS) })),
    );
    out['wait-distribution.svg'] = barChart(
      `Wait in acquire(), ${most} client processes (${when})`,
      labels.flatMap((label) => {
        const cell = most === undefined ? undefined : find(label, most);
        return cell ? [{ name: label, values: [cell.waitMs.p50, cell.waitMs.p99, cell.waitMs.max] }] : [];
      }),
      ['p50', 'p99', 'max'],
      'ms (log scale)',
      true,
    );
  }
  const pxc = results.pxcCells.filter((cell) => cell.csMs === 0);
  if (pxc.length > 0) {
    out['pxc-cells.svg'] = barChart(
      `P × C: processes × acquire loops on one lock (${when})`,
      pxc.map((cell) => ({
        name: `${cell.label}, ${cell.clients}×${cell.acquirersPerProcess}`,
        values: [cell.acquisitionsPerS],
      })),
      ['acquisitions/s'],
      'acquisitions/s',
      false,
    );
  }
  return out;
}

/** Writes the charts of `results` into `dir`; returns the files written. */
export function writeCharts(results: BenchResults, dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return Object.entries(charts(results)).map(([name, svg]) => {
    const file = join(dir, name);
    writeFileSync(file, svg);
    return file;
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [json, dir = 'docs/charts'] = process.argv.slice(2);
  if (!json) {
    console.error('usage: node --import tsx bench/charts.ts <bench/results/run.json> [out dir]');
    process.exit(64);
  }
  for (const file of writeCharts(JSON.parse(readFileSync(json, 'utf8')) as BenchResults, dir))
    console.log(file);
}
