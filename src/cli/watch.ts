/**
 * `locksmith watch [pattern]`: the locks matching `pattern`, redrawn in place every `--interval`:
 * holders, time left, queue length and acquisitions per second.
 *
 * Acquisitions per second are counted from what the refreshes see: a lock whose last fencing token
 * changed between two refreshes was acquired at least once meanwhile. So it is a lower bound (exact
 * while holds are longer than the interval); the `acquired` events (docs/operating.md) count every
 * acquisition.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CONNECTION_HELP, connectFrom, connectionOptions, prefixOf, withNegativeValues } from './common.js';
import { holdersCell, kindCell, readLocks, scanLockNames, table, timeLeftCell } from './inspect-commands.js';
import type { LockView } from './locks.js';
import { EXIT, EXIT_CODES_HELP, paintFor, parseCount, parseDuration, usageError } from './output.js';

export const WATCH_HELP = `Usage: locksmith watch [pattern] [options]

A live view of the locks whose name matches [pattern] (a glob; default *), redrawn in place: kind,
holder, time left, waiters, and acquisitions per second (seen between refreshes, a lower bound).
Stop it with Ctrl-C.

Options:
  --interval <ms>    time between refreshes (default: 1000)
  --held             only the locks held now
  --count <n>        stop after n refreshes
  --json             one JSON line per refresh ({"at", "locks": [...]}) instead of the screen
${CONNECTION_HELP}

${EXIT_CODES_HELP}`;

/** Acquisitions seen per lock over a sliding window of refreshes. */
export class AcquisitionRate {
  private readonly last = new Map<string, number>();
  private readonly seen: { at: number; name: string }[] = [];
  private readonly startedAt: number;

  constructor(
    private readonly windowMs = 10_000,
    now = performance.now(),
  ) {
    this.startedAt = now;
  }

  /** Records a refresh's views, taken at `now`. */
  update(views: readonly LockView[], now = performance.now()): void {
    for (const view of views) {
      const before = this.last.get(view.name);
      if (before !== undefined && view.lastFencingToken !== before)
        this.seen.push({ at: now, name: view.name });
      this.last.set(view.name, view.lastFencingToken);
    }
    while (this.seen.length > 0 && (this.seen[0]?.at ?? now) < now - this.windowMs) this.seen.shift();
  }

  /** Acquisitions per second of `name` (every lock if undefined) over the window. */
  perSecond(name?: string, now = performance.now()): number {
    const spanMs = Math.max(1, Math.min(this.windowMs, now - this.startedAt));
    const count = this.seen.filter((entry) => name === undefined || entry.name === name).length;
    return (count * 1_000) / spanMs;
  }
}

const watchOptions = {
  ...connectionOptions,
  json: { type: 'boolean' },
  held: { type: 'boolean' },
  interval: { type: 'string' },
  count: { type: 'string' },
} as const;

export async function watchCommand(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: withNegativeValues(argv, watchOptions),
    allowPositionals: true,
    options: watchOptions,
  });
  if (values.help) {
    process.stdout.write(`${WATCH_HELP}\n`);
    return EXIT.ok;
  }
  if (positionals.length > 1)
    throw usageError('watch takes at most one pattern (quote it: locksmith watch "jobs:*")');
  const pattern = positionals[0] ?? '*';
  const intervalMs = values.interval === undefined ? 1_000 : parseDuration('interval', values.interval);
  if (intervalMs < 50) throw usageError('--interval must be at least 50 ms');
  const count = values.count === undefined ? Number.POSITIVE_INFINITY : parseCount('count', values.count);
  const prefix = prefixOf(values);
  const connection = await connectFrom(values);
  const out = process.stdout;
  const paint = paintFor(out);
  const screen = out.isTTY === true && !values.json;
  const rate = new AcquisitionRate();
  const stopped = new AbortController();
  const stop = () => stopped.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (screen) out.write('\x1b[?25l'); // hide the cursor while redrawing
  try {
    for (let frame = 0; frame < count && !stopped.signal.aborted; frame += 1) {
      let views = await readLocks(connection, prefix, await scanLockNames(connection, prefix, pattern));
      const now = performance.now();
      rate.update(views, now);
      if (values.held) views = views.filter((view) => view.locked);
      if (values.json) {
        const locks = views.map((view) => ({
          ...view,
          acquisitionsPerSecond: rate.perSecond(view.name, now),
        }));
        out.write(`${JSON.stringify({ at: new Date().toISOString(), locks })}\n`);
      } else {
        const held = views.filter((view) => view.locked).length;
        const header = `${paint.bold('locksmith watch')} ${pattern}  ${connection.where}  ${new Date().toLocaleTimeString()}  ${views.length} ${views.length === 1 ? 'lock' : 'locks'}, ${held} held, ${rate.perSecond(undefined, now).toFixed(1)} acq/s`;
        const rows = views.map((view) => [
          view.name,
          kindCell(view),
          view.locked ? paint.red(holdersCell(view)) : paint.green('free'),
          timeLeftCell(view),
          String(view.queueLength),
          rate.perSecond(view.name, now).toFixed(1),
        ]);
        const body =
          rows.length > 0
            ? table([['NAME', 'KIND', 'HOLDER', 'LEFT', 'WAITING', 'ACQ/S'].map(paint.bold), ...rows])
            : `no locks match "${pattern}"`;
        // In place on a terminal: cursor home, the frame, then clear whatever the last one left below.
        out.write(screen ? `\x1b[H\x1b[2J${header}\n\n${body}\n` : `${header}\n${body}\n\n`);
      }
      if (frame + 1 < count) await sleep(intervalMs, undefined, { signal: stopped.signal }).catch(() => {});
    }
    return EXIT.ok;
  } finally {
    if (screen) out.write('\x1b[?25h');
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    connection.close();
  }
}
