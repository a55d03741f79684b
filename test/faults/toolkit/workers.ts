/**
 * Worker processes, seen from the parent: spawn, configure, stop, and pause with real signals
 * (SIGSTOP/SIGCONT: the whole process freezes, timers and all, as in a GC pause or a VM stall).
 * Stopped by PID, never by name.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  type FromWorker,
  type HistoryEvent,
  mono,
  type ResourceReply,
  type ResourceRequest,
  type ToWorker,
  type WorkerConfig,
} from './protocol.js';

const workerFile = join(import.meta.dirname, 'worker.ts');

export interface WorkerHooks {
  onEvents(events: HistoryEvent[]): void;
  /** Serves a read or write at the resource; may pause the worker (see scenarios). */
  onResource(worker: WorkerHandle, request: ResourceRequest): ResourceReply;
}

export class WorkerHandle {
  private paused = false;
  private pausedAt = 0;
  private waiters = new Map<FromWorker['type'], () => void>();
  private hooks: WorkerHooks | undefined;
  private stderr = '';

  private constructor(
    readonly index: number,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (message: FromWorker) => this.receive(message));
    child.stderr?.on('data', (chunk) => {
      this.stderr = (this.stderr + String(chunk)).slice(-4_000);
    });
  }

  static async spawn(index: number): Promise<WorkerHandle> {
    const child = spawn(process.execPath, ['--import', 'tsx', workerFile, String(index)], {
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    const handle = new WorkerHandle(index, child);
    // A safety net for a worker that never starts: its start-up with --import tsx alone has taken
    // over 30 s on a 2-core machine shared with other jobs.
    await handle.expect('ready', 180_000).catch(async (error: unknown) => {
      await handle.kill();
      throw error;
    });
    return handle;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(config: WorkerConfig, hooks: WorkerHooks): Promise<void> {
    this.hooks = hooks;
    this.send({ type: 'start', config });
    await this.expect('started', 30_000);
  }

  /** Ends the loop (in-flight acquires are aborted, a held lock is released); the client stays open. */
  async stop(): Promise<void> {
    this.resume();
    this.send({ type: 'stop' });
    await this.expect('stopped', 60_000);
  }

  async close(): Promise<void> {
    this.send({ type: 'close' });
    await this.expect('closed', 30_000);
    this.hooks = undefined;
  }

  /** SIGSTOP: the process stops dead, mid-whatever. */
  pause(): void {
    if (this.paused || !this.alive) return;
    this.paused = true;
    this.pausedAt = mono();
    process.kill(this.pid, 'SIGSTOP');
  }

  /** SIGCONT. */
  resume(): void {
    if (!this.paused || !this.alive) return;
    this.paused = false;
    process.kill(this.pid, 'SIGCONT');
    this.hooks?.onEvents([{ ev: 'frozen', w: this.index, from: this.pausedAt, t: mono() }]);
  }

  /** SIGKILL by PID, then waits for the exit. */
  async kill(): Promise<void> {
    if (!this.alive) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    process.kill(this.pid, 'SIGCONT');
    process.kill(this.pid, 'SIGKILL');
    await exited;
  }

  private send(message: ToWorker): void {
    if (!this.alive) throw new Error(`worker ${this.index} is gone:\n${this.stderr}`);
    this.child.send(message);
  }

  private expect(type: FromWorker['type'], timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(type);
        reject(
          new Error(`worker ${this.index} did not send '${type}' within ${timeoutMs} ms\n${this.stderr}`),
        );
      }, timeoutMs);
      const onExit = () => {
        clearTimeout(timer);
        reject(new Error(`worker ${this.index} exited while waiting for '${type}'\n${this.stderr}`));
      };
      this.child.once('exit', onExit);
      this.waiters.set(type, () => {
        clearTimeout(timer);
        this.child.off('exit', onExit);
        resolve();
      });
    });
  }

  private receive(message: FromWorker): void {
    switch (message.type) {
      case 'events':
        this.hooks?.onEvents(message.events);
        return;
      case 'resource': {
        const hooks = this.hooks;
        if (!hooks) return;
        const reply = hooks.onResource(this, message.request);
        if (this.alive) this.child.send({ type: 'resource-reply', id: message.id, reply } satisfies ToWorker);
        return;
      }
      default: {
        const waiter = this.waiters.get(message.type);
        this.waiters.delete(message.type);
        waiter?.();
      }
    }
  }
}

export async function spawnWorkers(count: number): Promise<WorkerHandle[]> {
  const spawned = await Promise.allSettled(Array.from({ length: count }, (_, i) => WorkerHandle.spawn(i)));
  const failed = spawned.find((result) => result.status === 'rejected');
  if (!failed) return spawned.map((result) => (result as PromiseFulfilledResult<WorkerHandle>).value);
  // The workers that did start would keep the runner alive after it reported the failure.
  await Promise.all(
    spawned.map((result) => (result.status === 'fulfilled' ? result.value.kill() : undefined)),
  );
  throw failed.reason;
}
