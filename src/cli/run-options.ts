/**
 * What `locksmith run` is asked to do: its options (flock(1)'s short ones among them: -n, -w, -E,
 * -c, -s, -x) read into a `RunPlan`, every mistake a usage error in the command's own words.
 */
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { CONNECTION_HELP, checkLockName, connectionOptions, withNegativeValues } from './common.js';
import { EXIT, EXIT_CODES_HELP, parseCount, parseDuration, usageError } from './output.js';

export const RUN_HELP = `Usage: locksmith run <name> [options] -- <command> [args…]
       locksmith run <name> [options] -c "<shell command>"

Runs <command> while holding the lock <name>: no two runs of one name overlap, on any machine
using the same Redis. The lock is extended while the command runs and released when it exits.

Options:
  --ttl <ms>               lease TTL: how long the lock outlives a crashed locksmith (default: 30s)
  --wait <ms>              wait at most this long for the lock (default: wait until it is free)
  -w <seconds>             the same in seconds, as flock -w (--wait-seconds)
  -n, --no-wait            one attempt: exit 75 at once if the lock is held
  -E, --conflict-exit-code <code>
                           the exit code when the lock is busy (default: 75)
  -c, --command <text>     run <text> with /bin/sh -c instead of a command after --
  --kind <kind>            mutex (default), fair (waiters served in arrival order), semaphore,
                           or read-write (a ReadWriteLock: -x writes, the default; -s reads)
  -s, --shared             a read lock of a ReadWriteLock: readers run together, never with a writer
  -x, --exclusive          its write lock (the default with --kind read-write)
  --limit <K>              semaphore: at most K runs at once (required with --kind semaphore)
  --lost-signal <sig>      signal sent to the command's processes if the lock is lost (default: SIGTERM)
  --grace <ms>             then SIGKILL after this long (default: 10s)
  --verbose                say on stderr whom it waits for, and how long it took
  -q, --quiet              print nothing of locksmith's own (errors still go to stderr)
${CONNECTION_HELP}

The command gets in its environment:
  LOCKSMITH_NAME            the lock name
  LOCKSMITH_FENCING_TOKEN   the lease's fencing token: pass it to the resource you write
  LOCKSMITH_TOKEN           the lease's owner token
  LOCKSMITH_TTL_MS          the lease TTL
  LOCKSMITH_VALIDITY_MS     milliseconds of validity at the start (extended while the command runs)

The command runs in a process group of its own (a new session, without a controlling terminal):
SIGINT, SIGTERM and SIGHUP sent to locksmith, the lost-lock signal and the SIGKILL after --grace go
to every process in it. The lock is released once none of them runs (what the command left in its
group gets SIGTERM, then SIGKILL). If locksmith itself is killed, a guard process stops the group
the same way. Durations take ms, s, m or h (30s, 5m); a bare number is milliseconds (-w: seconds).

Examples:
  locksmith run -n reindex -- ./reindex.sh          skip (exit 75) when another host runs it
  locksmith run deploy -w 600 -c './deploy.sh "$V"'  wait up to 10 minutes, then run through sh
  locksmith run --kind semaphore --limit 3 backups -- ./backup.sh

${EXIT_CODES_HELP}`;

export type RunKind = 'mutex' | 'fair' | 'semaphore' | 'read-write';
const KINDS: readonly RunKind[] = ['mutex', 'fair', 'semaphore', 'read-write'];

export interface RunPlan {
  readonly name: string;
  readonly command: readonly string[];
  readonly ttlMs: number;
  readonly waitMs: number | undefined;
  readonly noWait: boolean;
  readonly busyExitCode: number;
  readonly kind: RunKind;
  /** read-write: the read side. */
  readonly shared: boolean;
  readonly limit: number | undefined;
  readonly lostSignal: NodeJS.Signals;
  readonly graceMs: number;
  readonly quiet: boolean;
  readonly verbose: boolean;
}

const runOptions = {
  ...connectionOptions,
  ttl: { type: 'string' },
  wait: { type: 'string' },
  'wait-seconds': { type: 'string', short: 'w' },
  'no-wait': { type: 'boolean', short: 'n' },
  'conflict-exit-code': { type: 'string', short: 'E' },
  command: { type: 'string', short: 'c' },
  kind: { type: 'string' },
  shared: { type: 'boolean', short: 's' },
  exclusive: { type: 'boolean', short: 'x' },
  limit: { type: 'string' },
  'lost-signal': { type: 'string' },
  grace: { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  verbose: { type: 'boolean' },
} as const;

/** The lease must leave time to extend it (every ttl/3) across a round trip or two. */
const MIN_TTL_MS = 100;

export function parseRun(
  argv: readonly string[],
): { plan: RunPlan; values: Record<string, unknown> } | 'help' {
  const split = argv.indexOf('--');
  const own = split === -1 ? argv : argv.slice(0, split);
  const { values, positionals } = parseArgs({
    args: withNegativeValues(own, runOptions),
    allowPositionals: true,
    options: runOptions,
  });
  if (values.help) return 'help';
  const [name, ...rest] = positionals;
  if (name === undefined)
    throw usageError('run needs a lock name and a command: locksmith run <name> -- <command…>');
  checkLockName(name);
  if (rest.length > 0)
    throw usageError(`put the command after --: locksmith run ${name} -- ${rest.join(' ')}`);
  if (values.quiet && values.verbose) throw usageError('--quiet and --verbose exclude each other');
  const plan = {
    name,
    command: commandOf(name, argv, split, values.command),
    ...waiting(values),
    ...kindOf(values),
    ...stopping(values),
    quiet: values.quiet === true,
    verbose: values.verbose === true,
  };
  return { values, plan };
}

function commandOf(name: string, argv: readonly string[], split: number, shell: string | undefined) {
  const after = split === -1 ? [] : argv.slice(split + 1);
  if (shell !== undefined && after.length > 0)
    throw usageError('give the command either with -c "<shell command>" or after --, not both');
  if (shell !== undefined) {
    if (shell.trim() === '') throw usageError('-c needs a shell command');
    return ['/bin/sh', '-c', shell];
  }
  if (after.length === 0)
    throw usageError(
      `run needs a command after -- (or -c "<shell command>"): locksmith run ${name} -- <command…>`,
    );
  return after;
}

interface RunValues {
  readonly ttl?: string | undefined;
  readonly wait?: string | undefined;
  readonly 'wait-seconds'?: string | undefined;
  readonly 'no-wait'?: boolean | undefined;
  readonly 'conflict-exit-code'?: string | undefined;
  readonly kind?: string | undefined;
  readonly shared?: boolean | undefined;
  readonly exclusive?: boolean | undefined;
  readonly limit?: string | undefined;
  readonly 'lost-signal'?: string | undefined;
  readonly grace?: string | undefined;
}

function waiting(values: RunValues) {
  if (values.wait !== undefined && values['wait-seconds'] !== undefined)
    throw usageError('-w and --wait say the same: give one');
  const seconds = values['wait-seconds'];
  // flock -w takes seconds: a bare number is seconds here, a unit is taken as written.
  const waitMs =
    seconds !== undefined
      ? parseDuration('wait-seconds', /^\d+(\.\d+)?$/.test(seconds.trim()) ? `${seconds}s` : seconds, '-w')
      : values.wait === undefined
        ? undefined
        : parseDuration('wait', values.wait);
  if (waitMs !== undefined && values['no-wait']) throw usageError('--wait and --no-wait exclude each other');
  const code = values['conflict-exit-code'];
  if (code !== undefined && !(/^\d+$/.test(code) && Number(code) <= 255)) {
    throw usageError(`-E (--conflict-exit-code) expects an exit code from 0 to 255, got "${code}"`);
  }
  const ttlMs = values.ttl === undefined ? 30_000 : parseDuration('ttl', values.ttl);
  if (ttlMs < MIN_TTL_MS) {
    const hint = /^\d+$/.test(values.ttl ?? '') ? ` (a bare number is milliseconds: ${values.ttl}s?)` : '';
    throw usageError(`--ttl must be at least ${MIN_TTL_MS} ms, got "${values.ttl}"${hint}`);
  }
  return {
    ttlMs,
    waitMs,
    noWait: values['no-wait'] === true,
    busyExitCode: code === undefined ? EXIT.busy : Number(code),
  };
}

function kindOf(values: RunValues) {
  const kind = (values.kind ?? (values.shared || values.exclusive ? 'read-write' : 'mutex')) as RunKind;
  if (!KINDS.includes(kind)) throw usageError(`--kind must be ${KINDS.join(', ')}, got "${values.kind}"`);
  if (values.shared && values.exclusive)
    throw usageError('-s (--shared) and -x (--exclusive) exclude each other');
  if ((values.shared || values.exclusive) && kind !== 'read-write') {
    throw usageError(`-s and -x are the two sides of --kind read-write, not of --kind ${kind}`);
  }
  const limit = values.limit === undefined ? undefined : parseCount('limit', values.limit);
  if (kind === 'semaphore' && limit === undefined) throw usageError('--kind semaphore needs --limit <K>');
  if (kind !== 'semaphore' && limit !== undefined) throw usageError('--limit is for --kind semaphore');
  return { kind, shared: values.shared === true, limit };
}

function stopping(values: RunValues) {
  const lostSignal = (values['lost-signal'] ?? 'SIGTERM').toUpperCase();
  const signalName = lostSignal.startsWith('SIG') ? lostSignal : `SIG${lostSignal}`;
  if (!(signalName in constants.signals))
    throw usageError(`--lost-signal: unknown signal "${values['lost-signal']}"`);
  return {
    lostSignal: signalName as NodeJS.Signals,
    graceMs: values.grace === undefined ? 10_000 : parseDuration('grace', values.grace),
  };
}
