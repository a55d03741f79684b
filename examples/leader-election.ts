/**
 * Leader election: every instance campaigns for one lock; the holder leads. The watchdog renews
 * the lease for as long as the leader runs, and the lease's `signal` aborts the moment the lock is
 * lost (Redis no longer has our token, or validity ran out while we could not renew): the leader
 * then stops leading at once and campaigns again. SIGTERM or SIGINT: step down (release, so a
 * follower takes over without waiting for the TTL) and exit.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 INSTANCE=a npx tsx examples/leader-election.ts   (start several)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { type Lease, Mutex } from 'redis-locksmith';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const instance = process.env.INSTANCE ?? String(process.pid);
const ttlMs = Number(process.env.LEADER_TTL_MS ?? 10_000);
const election = new Mutex(redis, 'leader:reports', { ttlMs });

const shutdown = new AbortController();
process.once('SIGTERM', () => shutdown.abort());
process.once('SIGINT', () => shutdown.abort());

/** What the leader does while it leads: here a heartbeat naming the leader and its term. */
async function lead(lease: Lease): Promise<void> {
  console.log(`${instance}: leading (term ${lease.fencingToken})`);
  const stop = AbortSignal.any([lease.signal, shutdown.signal]);
  while (!stop.aborted) {
    await redis.set('leader:{reports}:heartbeat', `${instance} term ${lease.fencingToken}`);
    await sleep(ttlMs / 5, undefined, { signal: stop }).catch(() => {});
  }
  if (lease.signal.aborted)
    console.log(`${instance}: lost leadership (${lease.signal.reason}), stepping down`);
}

try {
  while (!shutdown.signal.aborted) {
    console.log(`${instance}: following, campaigning to lead`);
    let lease: Lease;
    try {
      lease = await election.acquire({ timeoutMs: Number.POSITIVE_INFINITY, signal: shutdown.signal });
    } catch (error) {
      if (shutdown.signal.aborted) break; // stopped while following
      throw error;
    }
    try {
      await lead(lease);
    } finally {
      await lease.release();
    }
  }
  console.log(`${instance}: stopped`);
} finally {
  await redis.quit();
}
