/**
 * The guard of a `run` job: a small shell, in a session of its own, that reads a pipe from
 * locksmith. Only locksmith holds the pipe's other end (Node opens it close-on-exec, so the job
 * does not inherit it): when it closes without "done" (locksmith SIGKILLed, OOM-killed, crashed),
 * the guard sends the lost-lock signal to the job's process group, and SIGKILL after the grace
 * period, so that the job does not run on while its lease expires. It ignores the signals a
 * terminal or a service manager sends to locksmith's group, which locksmith forwards itself.
 */
import { type ChildProcess, spawn } from 'node:child_process';

/** $1: the signal's name without SIG; $2: the grace period in tenths of a second. Line 1: the group. */
const GUARD = `trap '' INT TERM HUP QUIT
IFS= read -r group || exit 0
[ "$group" = done ] && exit 0
IFS= read -r line && [ "$line" = done ] && exit 0
echo "locksmith: locksmith ended while its job ran; stopping the job (process group $group) with SIG$1" >&2
kill -s "$1" -- "-$group" 2>/dev/null || exit 0
tenths=0
while [ "$tenths" -lt "$2" ] && kill -s 0 -- "-$group" 2>/dev/null; do sleep 0.1; tenths=$((tenths + 1)); done
kill -s KILL -- "-$group" 2>/dev/null
exit 0`;

export class JobGuard {
  private constructor(private readonly shell: ChildProcess | undefined) {}

  /**
   * Starts the guard before the job, so that a locksmith killed at any moment after the job
   * started leaves the guard the job's group. No guard on Windows (no process groups).
   */
  static start(signal: NodeJS.Signals, graceMs: number): JobGuard {
    if (process.platform === 'win32') return new JobGuard(undefined);
    const shell = spawn(
      '/bin/sh',
      ['-c', GUARD, 'locksmith-guard', signal.replace(/^SIG/, ''), String(Math.ceil(graceMs / 100))],
      { detached: true, stdio: ['pipe', 'ignore', 'inherit'] },
    );
    shell.on('error', () => {}); // no /bin/sh: the job runs unguarded, as it would on Windows
    shell.stdin?.on('error', () => {});
    shell.unref();
    return new JobGuard(shell);
  }

  /** The job's process group, once it started. */
  watch(group: number): void {
    this.shell?.stdin?.write(`${group}\n`);
  }

  /** The job is over (its group gone, or given up on): the guard exits without a signal. */
  done(): void {
    this.shell?.stdin?.end('done\n');
  }
}
