/**
 * Cron job guard: the same schedule fires on every instance of a service, and the job must run
 * once per tick, not once per instance.
 *
 * The lock is named after the tick, so instances that fire together contend for it and the losers
 * skip. The lock alone is not enough: an instance whose clock or start-up is late could take the
 * lock after the winner released it and run the job again, so the winner also records the tick as
 * done, and whoever holds the lock checks that first.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/cron-guard.ts   (start it on several machines)
 *   CRON_TICK pins the tick (default: the current minute); INSTANCE names this instance.
 */
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-locksmith';

const JOB = 'nightly-report';
const DONE_FOR_MS = 24 * 60 * 60 * 1_000;

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const instance = process.env.INSTANCE ?? `${hostname()}:${process.pid}`;
// Every instance firing for the same schedule computes the same tick (here: the minute).
const tick = process.env.CRON_TICK ?? new Date().toISOString().slice(0, 16);
const doneKey = `cron:{${JOB}}:done:${tick}`;

/** The job itself: writes one report. `signal` aborts if the lock is lost while it runs. */
async function writeReport(signal: AbortSignal): Promise<void> {
  await sleep(200, undefined, { signal }); // the work
  await redis.rpush(`cron:{${JOB}}:reports`, `${tick} by ${instance}`);
}

try {
  const lease = await new Mutex(redis, `cron:${JOB}:${tick}`, { ttlMs: 30_000 }).tryAcquire();
  if (lease === null) {
    console.log(`${instance}: skipped ${JOB} for ${tick}: another instance is running it`);
  } else {
    try {
      if (await redis.exists(doneKey)) {
        console.log(`${instance}: skipped ${JOB} for ${tick}: already done`);
      } else {
        await writeReport(lease.signal);
        await redis.set(doneKey, instance, 'PX', DONE_FOR_MS);
        console.log(`${instance}: ran ${JOB} for ${tick}`);
      }
    } finally {
      await lease.release();
    }
  }
} finally {
  await redis.quit();
}
