/**
 * The job `locksmith run` runs: the command in a process group of its own, so that a signal reaches
 * every process it started (`sh -c`, `npm run` and deploy scripts start grandchildren), not only
 * the first. Node offers a new group only with a new session (`detached`: setsid), so the job has
 * no controlling terminal: Ctrl-C reaches locksmith alone, which forwards it to the group once.
 * Windows has no process groups: there the command alone is signalled.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants as fsConstants, readdirSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const GROUPS = process.platform !== 'win32';

/**
 * The job's first process waits for locksmith's word on fd 3 before it becomes the command: started
 * before its guard knows its group, it could otherwise run unguarded if locksmith died in between
 * (seen under load: the command was ready and locksmith SIGKILLed before it had told its guard).
 * End of file instead of the word (locksmith gone): the command never runs.
 */
const GATE = 'IFS= read -r go <&3 || exit 0; exec 3<&-; exec "$@"';
/** How long processes may take to vanish after SIGKILL before they are reported as not stopped. */
const KILL_WAIT_MS = 5_000;

export interface JobExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export class Job {
  /** Resolves when the command (the group's leader) exited, or with the error that kept it from starting. */
  readonly exited: Promise<JobExit | Error>;

  private killTimer: NodeJS.Timeout | undefined;
  private killedAt: number | undefined;

  private constructor(private readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => {
      child.once('error', resolve);
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
  }

  static start(command: readonly string[], env: NodeJS.ProcessEnv): Job {
    const [file, ...args] = command as [string, ...string[]];
    if (!GROUPS) return new Job(spawn(file, args, { stdio: 'inherit', env }));
    // Behind the gate, a command that is not there would be the shell's exit 127: say it as spawn does.
    if (!executable(file, env.PATH)) return new Job(missing(file));
    const gated = spawn('/bin/sh', ['-c', GATE, 'locksmith-job', file, ...args], {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      env,
      detached: true,
    });
    return new Job(gated);
  }

  /** Lets the command run (its guard knows its group now). */
  go(): void {
    const gate = this.child.stdio[3] as NodeJS.WritableStream | null | undefined;
    if (!gate) return;
    (gate as unknown as { on(event: 'error', listener: () => void): void }).on('error', () => {});
    gate.end('go\n');
  }

  /** The process group's id (the command's PID), undefined when it did not start. */
  get group(): number | undefined {
    return this.child.pid;
  }

  /** Sends `signal` to every process of the job still in its group. */
  signal(signal: NodeJS.Signals): void {
    const group = this.child.pid;
    if (group === undefined) return;
    try {
      process.kill(GROUPS ? -group : group, signal);
    } catch {
      // ESRCH: the group is gone already.
    }
  }

  /** Whether `stop` was called. */
  get stopping(): boolean {
    return this.killTimer !== undefined || this.killedAt !== undefined;
  }

  /** Stops the job: `signal` to its group now, SIGKILL after `graceMs` (then `onKill`). Once only. */
  stop(signal: NodeJS.Signals, graceMs: number, onKill: () => void): void {
    if (this.stopping) return;
    this.signal(signal);
    this.killTimer = setTimeout(() => {
      if (GROUPS && this.running().length === 0) return;
      onKill();
      this.killedAt = performance.now();
      this.signal('SIGKILL');
    }, graceMs);
  }

  /**
   * Resolves once no process of the job runs (the caller has stopped it, or it ended by itself);
   * with the PIDs still running if they outlived SIGKILL by KILL_WAIT_MS.
   */
  async gone(): Promise<number[]> {
    let left = this.running();
    while (left.length > 0) {
      if (this.killedAt !== undefined && performance.now() - this.killedAt > KILL_WAIT_MS) break;
      // Nobody but a process's parent hears of its end: the group is read again.
      await sleep(50);
      left = this.running();
    }
    clearTimeout(this.killTimer);
    return left;
  }

  /**
   * The PIDs of the job's processes still running: on Linux read from /proc (a zombie has finished;
   * PID 1 of a container may never reap it); elsewhere the group's id while it has any member.
   */
  running(): number[] {
    const group = this.child.pid;
    if (group === undefined || !GROUPS) return [];
    if (process.platform === 'linux') return runningInGroup(group);
    try {
      process.kill(-group, 0);
      return [group];
    } catch {
      return [];
    }
  }
}

function runningInGroup(group: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so read after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === group && state !== 'Z') pids.push(Number(entry));
  }
  return pids;
}

/** Whether `file` names an executable file, by itself (with a `/`) or on `path`, as exec would find it. */
function executable(file: string, path: string | undefined): boolean {
  const candidates = file.includes('/')
    ? [file]
    : (path ?? '').split(delimiter).map((dir) => join(dir || '.', file));
  return candidates.some((candidate) => {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** A child that never started because `file` is not there: it reports ENOENT as spawn would. */
function missing(file: string): ChildProcess {
  const child = spawn(file, [], { stdio: 'ignore' });
  child.on('error', () => {});
  return child;
}
