/** `locksmith status`, `locksmith list` and `locksmith release --force`. */
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import {
  CONNECTION_HELP,
  connectFrom,
  connectionOptions,
  lockNameArg,
  prefixOf,
  withNegativeValues,
} from './common.js';
import type { Connection } from './connect.js';
import { matchesName, nameOfKey, scanPattern } from './keys.js';
import { forceRelease, type HolderView, type LockView, readLock } from './locks.js';
import {
  CliError,
  EXIT,
  EXIT_CODES_HELP,
  formatMs,
  holderName,
  type Paint,
  paintFor,
  usageError,
} from './output.js';

export const STATUS_HELP = `Usage: locksmith status <name> [--json]

Shows the lock <name>: its kind, whether it is held, by whom (the lease's label, host:pid, when it
has one, else its owner token), for how long still, how many wait, its last fencing token.

Options:
  --json             one JSON object instead of text
${CONNECTION_HELP}

${EXIT_CODES_HELP}`;

export const LIST_HELP = `Usage: locksmith list [pattern] [--json] [--held]

Lists every lock (of every kind) whose name matches [pattern] (a glob: *, ?, [abc]; default *),
found with SCAN (never KEYS, so a large Redis is not blocked). A lock that was ever taken is listed,
held or free.

Options:
  --held             only the locks held now
  --json             a JSON array instead of text
${CONNECTION_HELP}

${EXIT_CODES_HELP}`;

export const RELEASE_HELP = `Usage: locksmith release <name> --force [--yes] [--json]

Frees the lock <name> whoever holds it, as if its holder had released it (a waiter gets it next),
and says who held it. The holder is not told: it finds out at its next extension, up to a third of
its TTL later, when its lease is lost. Until then the old holder runs on beside the next one: a
\`locksmith run\` holding it stops its command only then (--lost-signal, SIGKILL after --grace).
To shorten that window, run such jobs with a shorter --ttl (extended every ttl/3) and --grace.
On a terminal it asks for confirmation first.

Options:
  --force            required: this takes the lock from a process that believes it holds it
  --yes, -y          do not ask for confirmation
  --json             print what was released as JSON
${CONNECTION_HELP}

${EXIT_CODES_HELP}`;

const statusOptions = { ...connectionOptions, json: { type: 'boolean' } } as const;

/** One holder in a line: "host:42 (token 3f1a…), 12.3 s left, 2 permits". */
function describeHolder(holder: HolderView): string {
  const parts = [
    holder.label ? `${holder.label} (token ${holderName({ token: holder.token })})` : holderName(holder),
  ];
  if (holder.role) parts.push(holder.role);
  parts.push(`${formatMs(holder.remainingTtlMs)} left`);
  if (holder.permits > 1 && holder.role !== 'writer') parts.push(`${holder.permits} permits`);
  return parts.join(', ');
}

export function statusText(view: LockView, paint: Paint): string {
  const rows: [string, string][] = [
    ['lock', paint.bold(view.name)],
    ['kind', kindCell(view)],
    ['state', view.locked ? paint.red('held') : paint.green('free')],
  ];
  for (const holder of view.holders) rows.push(['holder', describeHolder(holder)]);
  if (view.holdCount !== undefined) rows.push(['holds', String(view.holdCount)]);
  if (view.limit !== undefined) rows.push(['limit', String(view.limit)]);
  rows.push(['waiting', String(view.queueLength)]);
  rows.push(['fencing', String(view.lastFencingToken)]);
  return rows.map(([key, value]) => `${key.padEnd(9)} ${value}`).join('\n');
}

export async function statusCommand(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: withNegativeValues(argv, statusOptions),
    allowPositionals: true,
    options: statusOptions,
  });
  if (values.help) return help(STATUS_HELP);
  const name = lockNameArg(positionals, 'status');
  const prefix = prefixOf(values);
  const connection = await connectFrom(values);
  try {
    const view = await readLock(connection, prefix, name);
    process.stdout.write(
      values.json ? `${JSON.stringify(view)}\n` : `${statusText(view, paintFor(process.stdout))}\n`,
    );
    return EXIT.ok;
  } finally {
    connection.close();
  }
}

/** The names of every lock matching `pattern`, sorted, found with SCAN. */
export async function scanLockNames(
  connection: Connection,
  prefix: string,
  pattern: string,
): Promise<string[]> {
  const names = new Set<string>();
  let cursor = '0';
  do {
    const reply = (await connection.command(
      'SCAN',
      cursor,
      'MATCH',
      scanPattern(prefix, pattern),
      'COUNT',
      '1000',
    )) as [string, string[]];
    cursor = String(reply[0]);
    for (const key of reply[1]) {
      const name = nameOfKey(prefix, String(key));
      if (name !== undefined && matchesName(pattern, name)) names.add(name);
    }
  } while (cursor !== '0');
  return [...names].sort();
}

/**
 * The state of each lock in `names` (read a few at a time); names whose keys turned out not to be a
 * lock (or vanished) are left out.
 */
export async function readLocks(
  connection: Connection,
  prefix: string,
  names: readonly string[],
): Promise<LockView[]> {
  const views: LockView[] = [];
  const batch = 16;
  for (let i = 0; i < names.length; i += batch) {
    const read = await Promise.all(
      names.slice(i, i + batch).map((name) =>
        readLock(connection, prefix, name).catch((error: unknown) => {
          if (error instanceof CliError && error.exitCode === EXIT.notALock) return undefined;
          throw error;
        }),
      ),
    );
    for (const view of read) if (view) views.push(view);
  }
  return views;
}

/** Rows of a table, columns padded to their widest cell (colour codes not counted). */
export function table(rows: readonly (readonly string[])[]): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape of a colour code
  const visible = (cell: string) => cell.replace(/\x1b\[\d+m/g, '').length;
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, visible(cell));
    });
  }
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - visible(cell))))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * The kind column: a free hand-off lock's key does not tell Mutex, FairMutex and ReentrantMutex
 * apart, so its kind is shown as unknown rather than as "free" (the state column says that).
 */
export function kindCell(view: LockView): string {
  return view.kind === 'free' ? '-' : view.kind;
}

/** The holder column: the first holder, and how many more. */
export function holdersCell(view: LockView): string {
  const [first, ...more] = view.holders;
  if (!first) return '-';
  return more.length > 0 ? `${holderName(first)} +${more.length}` : holderName(first);
}

/** The time-left column: the soonest expiry among the holders. */
export function timeLeftCell(view: LockView): string {
  const left = view.holders.map((h) => h.remainingTtlMs).filter((ms): ms is number => ms !== undefined);
  return left.length > 0 ? formatMs(Math.min(...left)) : '-';
}

export async function listCommand(argv: readonly string[]): Promise<number> {
  const options = { ...statusOptions, held: { type: 'boolean' } } as const;
  const { values, positionals } = parseArgs({
    args: withNegativeValues(argv, options),
    allowPositionals: true,
    options,
  });
  if (values.help) return help(LIST_HELP);
  if (positionals.length > 1)
    throw usageError('list takes at most one pattern (quote it: locksmith list "jobs:*")');
  const pattern = positionals[0] ?? '*';
  const prefix = prefixOf(values);
  const connection = await connectFrom(values);
  try {
    let views = await readLocks(connection, prefix, await scanLockNames(connection, prefix, pattern));
    if (values.held) views = views.filter((view) => view.locked);
    if (values.json) {
      process.stdout.write(`${JSON.stringify(views)}\n`);
      return EXIT.ok;
    }
    const paint = paintFor(process.stdout);
    if (views.length === 0) {
      process.stdout.write(`no locks match "${pattern}"\n`);
      return EXIT.ok;
    }
    const rows = views.map((view) => [
      view.name,
      kindCell(view),
      view.locked ? paint.red('held') : paint.green('free'),
      holdersCell(view),
      timeLeftCell(view),
      String(view.queueLength),
    ]);
    process.stdout.write(
      `${table([['NAME', 'KIND', 'STATE', 'HOLDER', 'LEFT', 'WAITING'].map(paint.bold), ...rows])}\n`,
    );
    return EXIT.ok;
  } finally {
    connection.close();
  }
}

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

export async function releaseCommand(argv: readonly string[]): Promise<number> {
  const options = {
    ...statusOptions,
    force: { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
  } as const;
  const { values, positionals } = parseArgs({
    args: withNegativeValues(argv, options),
    allowPositionals: true,
    options,
  });
  if (values.help) return help(RELEASE_HELP);
  const name = lockNameArg(positionals, 'release');
  if (!values.force) {
    throw usageError(
      `release takes a lock from whoever holds it: add --force to mean it (locksmith release ${name} --force)`,
    );
  }
  const prefix = prefixOf(values);
  const connection = await connectFrom(values);
  try {
    const view = await readLock(connection, prefix, name);
    if (!view.locked) {
      if (values.json) process.stdout.write(`${JSON.stringify({ name, released: false, holders: [] })}\n`);
      else process.stdout.write(`"${name}" is not held: nothing to release\n`);
      return EXIT.ok;
    }
    const who = view.holders.map(describeHolder).join('; ');
    if (process.stdin.isTTY && !values.yes && !(await confirm(`Release "${name}", held by ${who}?`))) {
      process.stderr.write('locksmith: not released\n');
      return EXIT.error;
    }
    const released = await forceRelease(connection, prefix, view);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ name, released: released.length > 0, holders: released })}\n`);
    } else if (released.length > 0) {
      process.stdout.write(`released "${name}", held by ${released.map(describeHolder).join('; ')}\n`);
    } else {
      process.stdout.write(`"${name}" was released by its holder meanwhile: nothing to release\n`);
    }
    return EXIT.ok;
  } finally {
    connection.close();
  }
}

export function help(text: string): number {
  process.stdout.write(`${text}\n`);
  return EXIT.ok;
}
