/**
 * The small workload both metrics examples measure (not an example of its own): three workers
 * share one lock five times each, so most of them wait, then one caller gives up on a held lock.
 * 16 acquisitions and holds, at least 3 contended acquires, 1 timeout.
 */
import type { Redis } from 'ioredis';
import { LockTimeoutError, Mutex } from 'redis-locksmith';

export async function contendedWorkload(redis: Redis): Promise<void> {
  const report = new Mutex(redis, 'metrics-example:report', { ttlMs: 5_000 });
  const worker = async () => {
    for (let i = 0; i < 5; i += 1)
      await report.using(() => new Promise((resolve) => setTimeout(resolve, 10)));
  };
  await Promise.all([worker(), worker(), worker()]);
  // One caller that gives up: the lock is held for longer than it waits.
  const held = await report.acquire();
  await report.acquire({ timeoutMs: 50 }).catch((error: unknown) => {
    if (!(error instanceof LockTimeoutError)) throw error;
  });
  await held.release();
}
