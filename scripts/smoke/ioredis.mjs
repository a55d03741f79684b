// Tarball smoke test, ESM with ioredis: what a user writes after `npm install redis-locksmith ioredis`.
// scripts/smoke-tarball.mjs runs it from a scratch project with REDIS_URL set; it must exit by itself.
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-locksmith';

const redis = new Redis(process.env.REDIS_URL);
try {
  const mutex = new Mutex(redis, 'smoke:esm', { ttlMs: 10_000 });
  const first = await mutex.acquire();
  assert.ok(
    Number.isSafeInteger(first.fencingToken) && first.fencingToken > 0,
    `fencingToken ${first.fencingToken}`,
  );
  // A second caller waits (subscribed to the release channel) until the first releases.
  const waiting = mutex.acquire({ timeoutMs: 5_000 });
  assert.equal(await first.release(), true);
  const second = await waiting;
  assert.ok(second.fencingToken > first.fencingToken, 'fencing tokens increase');
  assert.equal(await second.release(), true);
} finally {
  await redis.quit();
}
console.log('ok');
