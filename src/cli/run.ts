/**
 * `locksmith run <name> -- <command…>`: flock(1) across machines. Acquires the lock, runs the
 * command as a job in its own process group (job.ts) while the lease's watchdog extends it, forwards
 * SIGINT/SIGTERM/SIGHUP to the group, releases when no process of the job runs and exits with the
 * command's code. If the lock is lost meanwhile (its key deleted or taken over, Redis silent past
 * the TTL) the job is stopped: `--lost-signal`, then SIGKILL after `--grace`, and the exit code is
 * 76. A guard (job-guard.ts) does the same if locksmith itself dies.
 */
import { constants } from 'node:os';
import {
  FairMutex,
  type Lease,
  LockTimeoutError,
  Mutex,
  ReadWriteLock,
  Semaphore,
  TooManyAttemptsError,
} from 'redis-locksmith';
import { connectFrom, prefixOf } from './common.js';
import type { Connection } from './connect.js';
import { Job } from './job.js';
import { JobGuard } from './job-guard.js';
import { readLock } from './locks.js';
import { CliError, EXIT, formatMs, holderName, oneLine } from './output.js';
import { parseRun, RUN_HELP, type RunPlan } from './run-options.js';

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

function makeLock(connection: Connection, plan: RunPlan, prefix: string) {
  const options = { prefix, ttlMs: plan.ttlMs };
  if (plan.kind === 'semaphore')
    return new Semaphore(connection.client, plan.name, { ...options, limit: plan.limit as number });
  if (plan.kind === 'fair') return new FairMutex(connection.client, plan.name, options);
  if (plan.kind === 'read-write') {
    const lock = new ReadWriteLock(connection.client, plan.name, options);
    return plan.shared ? lock.readLock() : lock.writeLock();
  }
  return new Mutex(connection.client, plan.name, options);
}

/** Who holds the lock, and how many wait, as " (held by a, b, 2 waiting)"; best-effort. */
async function holdersOf(connection: Connection, prefix: string, name: string): Promise<string> {
  try {
    const view = await readLock(connection, prefix, name);
    if (!view.locked) return '';
    const waiting = view.queueLength > 0 ? `, ${view.queueLength} waiting` : '';
    return ` (held by ${view.holders.map(holderName).join(', ')}${waiting})`;
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
    const startedAt = performance.now();
    if (plan.verbose && !plan.noWait) {
      const holders = await holdersOf(connection, prefix, plan.name);
      if (holders !== '') say(`waiting for "${plan.name}"${holders}…`);
    }
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
        `"${plan.name}" is busy${await holdersOf(connection, prefix, plan.name)}${waited}`,
        plan.busyExitCode,
      );
    }
    if (plan.verbose) {
      const took = formatMs(performance.now() - startedAt);
      say(`acquired "${plan.name}" in ${took} (fencing token ${lease.fencingToken})`);
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
  job.go();
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
