import type { GrantPath, LeaseMaker, LeaseSource, LockBackend } from '../plan.js';
import { type LocalHolder, type ProcessBatch, scopeTable } from './local-batch.js';

/** How many writers of each lock wait now in this process, by client (context) and lock key. */
const counts = new WeakMap<object, Map<string, number>>();

/** Whether a writer of `key` on `scope` waits now in this process (`BatchBackend.yieldsNow`). */
export function writerWaiting(scope: object, key: string): boolean {
  return (counts.get(scope)?.get(key) ?? 0) > 0;
}

/**
 * A read-write lock's writers in one process, as the lease source of its write side: a writer is
 * counted while it waits for Redis, and while one is, nobody joins the process's read hold
 * (`SharedHolds`), which then ends once its readers are done, so the writer queued behind it in
 * Redis gets in. It passes nothing on among callers: each writer deals with Redis alone. A grant
 * with no validity left is given back by the shell, uncounted for that give-back's round trip,
 * before the writer waits again: a hold may take readers meanwhile, within its own bounds.
 */
export class WaitingWriters implements ProcessBatch {
  readonly heldHere = false;

  constructor(
    private readonly scope: object,
    private readonly key: string,
    private readonly path: GrantPath,
    private readonly backend: LockBackend,
  ) {}

  leases<H extends LocalHolder>(_bounds: unknown, makeLease: LeaseMaker<H>): LeaseSource<H> {
    const { path, backend } = this;
    return {
      acquire: async (plan) => {
        const done = this.count();
        try {
          return makeLease(plan, await path.wait(plan), backend);
        } finally {
          done();
        }
      },
      tryOnce: async (plan) => {
        const won = await path.once(plan);
        return won && makeLease(plan, won, backend);
      },
    };
  }

  /** Counts one writer as waiting; the returned callback counts it out. */
  private count(): () => void {
    const { key } = this;
    const byKey = scopeTable(counts, this.scope);
    byKey.set(key, (byKey.get(key) ?? 0) + 1);
    return () => {
      const left = (byKey.get(key) ?? 1) - 1;
      if (left > 0) byKey.set(key, left);
      else byKey.delete(key);
    };
  }

  forget(): void {}

  extendedFromOutside(): undefined {
    return undefined;
  }
}
