// Tarball smoke test, ESM with Valkey GLIDE: what a user writes after
// `npm install redis-locksmith @valkey/valkey-glide`. scripts/smoke-tarball.mjs runs it from a
// scratch project with REDIS_URL set; it must exit by itself once the client is closed.
import assert from 'node:assert/strict';
import { GlideClient } from '@valkey/valkey-glide';
import { Mutex } from 'redis-locksmith';

// GLIDE takes addresses, not a URL; the URL's path is the database.
const { hostname, port, pathname } = new URL(process.env.REDIS_URL);
const client = await GlideClient.createClient({
  addresses: [{ host: hostname, port: Number(port) }],
  databaseId: Number(pathname.slice(1) || 0),
});
try {
  const mutex = new Mutex(client, 'smoke:esm', { ttlMs: 10_000 });
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
  client.close();
}
console.log('ok');
