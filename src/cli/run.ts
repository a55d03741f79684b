/**
 * `locksmith run <name> -- <command…>`: flock(1) across machines. Acquires the lock, runs the
 * command while the lease's watchdog extends it, forwards SIGINT/SIGTERM/SIGHUP to the command,
 * releases when the command exits and exits with its code. If the lock is lost meanwhile (its key
 * deleted or taken over, Redis silent past the TTL) the command is stopped: `--lost-signal`, then
 * SIGKILL after `--grace`, and the exit code is 76.
 */
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import {
  FairMutex,
  type Lease,
  LockTimeoutError,
  Mutex,
  Semaphore,
  TooManyAttemptsError,
} from 'redis-locksmith';
import { CONNECTION_HELP, connectFrom, connectionOptions, prefixOf } from './common.js';
import type { Connection } from './connect.js';
import { Job } from './job.js';
import { JobGuard } from './job-guard.js';
import { readLock } from './locks.js';
import {
  CliError,
  EXIT,
  EXIT_CODES_HELP,
  formatMs,
  holderName,
  oneLine,
  parseCount,
  parseDuration,
  usageError,
} from './output.js';

export const RUN_HELP = `Usage: locksmith run <name> [options] -- <command> [args…]

Runs <command> while holding the lock <name>: no two runs of one name overlap, on any machine
using the same Redis. The lock is extended while the command runs and released when it exits.

Options:
  --ttl <ms>            lease TTL: how long the lock outlives a crashed locksmith (default: 30000)
  --wait <ms>           wait at most this long for the lock (default: wait until it is free)
  --no-wait             one attempt: exit 75 at once if the lock is held
  --kind <kind>         mutex (default), fair (waiters served in arrival order) or semaphore
  --limit <K>           semaphore: at most K runs at once (required with --kind semaphore)
  --lost-signal <sig>   signal sent to the command if the lock is lost (default: SIGTERM)
  --grace <ms>          then SIGKILL after this long (default: 10000)
  --quiet               print nothing of locksmith's own (errors still go to stderr)
${CONNECTION_HELP}

The command gets in its environment:
  LOCKSMITH_NAME            the lock name
  LOCKSMITH_FENCING_TOKEN   the lease's fencing token: pass it to the resource you write
  LOCKSMITH_TOKEN           the lease's owner token
  LOCKSMITH_TTL_MS          the lease TTL
  LOCKSMITH_VALIDITY_MS     milliseconds of validity at the start (extended while the command runs)

Signals: SIGINT, SIGTERM and SIGHUP are forwarded to the command; the lock is released once it
exits. Durations take ms, s, m or h (30s, 5m).

${EXIT_CODES_HELP}`;

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

interface RunPlan {
  readonly name: string;
  readonly command: readonly string[];
  readonly ttlMs: number;
  readonly waitMs: number | undefined;
  readonly noWait: boolean;
  readonly kind: 'mutex' | 'fair' | 'semaphore';
  readonly limit: number | undefined;
  readonly lostSignal: NodeJS.Signals;
  readonly graceMs: number;
  readonly quiet: boolean;
}

function parseRun(argv: readonly string[]): { plan: RunPlan; values: Record<string, unknown> } | 'help' {
  const split = argv.indexOf('--');
  const own = split === -1 ? argv : argv.slice(0, split);
  const command = split === -1 ? [] : argv.slice(split + 1);
  const { values, positionals } = parseArgs({
    args: [...own],
    allowPositionals: true,
    options: {
      ...connectionOptions,
      ttl: { type: 'string' },
      wait: { type: 'string' },
      'no-wait': { type: 'boolean' },
      kind: { type: 'string' },
      limit: { type: 'string' },
      'lost-signal': { type: 'string' },
      grace: { type: 'string' },
      quiet: { type: 'boolean', short: 'q' },
    },
  });
  if (values.help) return 'help';
  const [name, ...rest] = positionals;
  if (name === undefined)
    throw usageError('run needs a lock name and a command: locksmith run <name> -- <command…>');
  if (rest.length > 0)
    throw usageError(`put the command after --: locksmith run ${name} -- ${rest.join(' ')}`);
  if (command.length === 0)
    throw usageError(`run needs a command after --: locksmith run ${name} -- <command…>`);
  if (values.wait !== undefined && values['no-wait'])
    throw usageError('--wait and --no-wait exclude each other');
  const kind = values.kind ?? 'mutex';
  if (kind !== 'mutex' && kind !== 'fair' && kind !== 'semaphore') {
    throw usageError(`--kind must be mutex, fair or semaphore, got "${kind}"`);
  }
  const limit = values.limit === undefined ? undefined : parseCount('limit', values.limit);
  if (kind === 'semaphore' && limit === undefined) throw usageError('--kind semaphore needs --limit <K>');
  if (kind !== 'semaphore' && limit !== undefined) throw usageError('--limit is for --kind semaphore');
  const lostSignal = (values['lost-signal'] ?? 'SIGTERM').toUpperCase();
  const signalName = lostSignal.startsWith('SIG') ? lostSignal : `SIG${lostSignal}`;
  if (!(signalName in constants.signals))
    throw usageError(`--lost-signal: unknown signal "${values['lost-signal']}"`);
  return {
    values,
    plan: {
      name,
      command,
      ttlMs: values.ttl === undefined ? 30_000 : parseDuration('ttl', values.ttl),
      waitMs: values.wait === undefined ? undefined : parseDuration('wait', values.wait),
      noWait: values['no-wait'] === true,
      kind,
      limit,
      lostSignal: signalName as NodeJS.Signals,
      graceMs: values.grace === undefined ? 10_000 : parseDuration('grace', values.grace),
      quiet: values.quiet === true,
    },
  };
}

function makeLock(connection: Connection, plan: RunPlan, prefix: string) {
  const options = { prefix, ttlMs: plan.ttlMs };
  if (plan.kind === 'semaphore')
    return new Semaphore(connection.client, plan.name, { ...options, limit: plan.limit as number });
  if (plan.kind === 'fair') return new FairMutex(connection.client, plan.name, options);
  return new Mutex(connection.client, plan.name, options);
}

/** Who holds `name`, for the "busy" message; best-effort. */
async function heldBy(connection: Connection, prefix: string, name: string): Promise<string> {
  try {
    const view = await readLock(connection, prefix, name);
    const holders = view.holders.map(holderName);
    return holders.length > 0 ? ` (held by ${holders.join(', ')})` : '';
  } catch {
    return '';
  }
}

export async function runCommand(argv: readonly string[]): Promise<number> {
  const parsed = parseRun(argv);
  if (parsed === 'help') {
    process.stdout.write(`${RUN_HELP}\n`);
    return EXIT.ok;
  }
  const { plan, values } = parsed;
  const prefix = prefixOf(values);
  const say = (line: string) => {
    if (!plan.quiet) process.stderr.write(`locksmith: ${line}\n`);
  };
  const connection = await connectFrom(values);
  try {
    const lock = makeLock(connection, plan, prefix);
    let lease: Lease | null;
    try {
      lease = plan.noWait
        ? await lock.tryAcquire()
        : await lock.acquire({ timeoutMs: plan.waitMs ?? Number.POSITIVE_INFINITY });
    } catch (error) {
      if (!(error instanceof LockTimeoutError || error instanceof TooManyAttemptsError)) throw error;
      lease = null;
    }
    if (lease === null) {
      const waited = plan.noWait ? '' : ` after waiting ${formatMs(plan.waitMs)}`;
      throw new CliError(
        `"${plan.name}" is busy${await heldBy(connection, prefix, plan.name)}${waited}`,
        EXIT.busy,
      );
    }
    return await supervise(lease, plan, say);
  } finally {
    connection.close();
  }
}

/** Runs the command under `lease`; resolves with the exit code once its job ended and the lock is released. */
async function supervise(lease: Lease, plan: RunPlan, say: (line: string) => void): Promise<number> {
  const guard = JobGuard.start(plan.lostSignal, plan.graceMs);
  const job = Job.start(plan.command, {
    ...process.env,
    LOCKSMITH_NAME: plan.name,
    LOCKSMITH_FENCING_TOKEN: String(lease.fencingToken),
    LOCKSMITH_TOKEN: lease.token,
    LOCKSMITH_TTL_MS: String(lease.ttlMs),
    LOCKSMITH_VALIDITY_MS: String(Math.floor(lease.remainingMs)),
  });
  if (job.group !== undefined) guard.watch(job.group);
  const forward = (signal: NodeJS.Signals) => job.signal(signal);
  for (const signal of FORWARDED) process.on(signal, forward);
  const sayKill = () => say(`the command's processes did not exit within ${formatMs(plan.graceMs)}; SIGKILL`);

  let lost = false;
  const onLost = () => {
    lost = true;
    say(
      `lost the lock "${plan.name}" (${oneLine(lease.signal.reason)}); stopping the command's process group with ${plan.lostSignal}`,
    );
    job.stop(plan.lostSignal, plan.graceMs, sayKill);
  };
  lease.signal.addEventListener('abort', onLost, { once: true });

  const outcome = await job.exited;
  lease.signal.removeEventListener('abort', onLost);
  if (!(outcome instanceof Error)) {
    // The lock is held until no process of the job runs: what the command left in its group (a
    // background child) must not run on unlocked.
    const left = job.running();
    if (left.length > 0 && !job.stopping) {
      say(
        `the command exited and left ${plural(left.length, 'process')} in its group (${left.join(', ')}); stopping ${left.length === 1 ? 'it' : 'them'} with SIGTERM`,
      );
      job.stop('SIGTERM', plan.graceMs, sayKill);
    }
    const survivors = await job.gone();
    if (survivors.length > 0)
      say(
        `could not stop ${plural(survivors.length, 'process')} of the command's group, still running after SIGKILL: ${survivors.join(', ')}`,
      );
  }
  guard.done();
  for (const signal of FORWARDED) process.off(signal, forward);

  await lease
    .release()
    .catch((error: unknown) => say(`the release failed: ${oneLine(error)} (the lock expires by its TTL)`));
  if (outcome instanceof Error) {
    const file = plan.command[0];
    const notFound = (outcome as { code?: string }).code === 'ENOENT';
    throw new CliError(
      notFound ? `command not found: ${file}` : `cannot start ${file}: ${oneLine(outcome)}`,
      EXIT.notFound,
    );
  }
  if (lost) return EXIT.lost;
  if (outcome.code !== null) return outcome.code;
  return 128 + (constants.signals[outcome.signal as NodeJS.Signals] ?? 0);
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 'es'}`;
