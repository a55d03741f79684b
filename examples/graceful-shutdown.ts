/**
 * Graceful shutdown: a worker that must be the only consumer of a queue holds a lock while it
 * runs. On SIGTERM (a deploy, a scale-down) it stops taking work, releases the lock at once, so
 * the next instance does not wait out the TTL, closes its client, and the process exits by itself.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/graceful-shutdown.ts   (then: kill -TERM <pid>)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { type Lease, Mutex } from 'redis-locksmith';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const terminating = new AbortController();
process.once('SIGTERM', () => {
  console.log('SIGTERM: finishing the current item, then releasing the lock');
  terminating.abort();
});

/** The work: one item at a time until terminated or the lock is lost. */
async function consume(lease: Lease): Promise<number> {
  const stop = AbortSignal.any([terminating.signal, lease.signal]);
  let processed = 0;
  while (!stop.aborted) {
    await redis.incr('jobs:{consumer}:processed'); // one item
    processed += 1;
    await sleep(50, undefined, { signal: stop }).catch(() => {});
  }
  return processed;
}

try {
  // A long TTL: were the lock not released on SIGTERM, the next instance would wait a minute.
  const lease = await new Mutex(redis, 'queue-consumer', { ttlMs: 60_000 }).acquire({
    timeoutMs: Number.POSITIVE_INFINITY,
    signal: terminating.signal,
  });
  console.log(`consuming, lock held (fencing token ${lease.fencingToken}), pid ${process.pid}`);
  try {
    console.log(`processed ${await consume(lease)} items`);
  } finally {
    console.log(`released the lock: ${await lease.release()}`);
  }
} catch (error) {
  if (!terminating.signal.aborted) throw error; // terminated while waiting for the lock: nothing held
} finally {
  await redis.quit();
}
