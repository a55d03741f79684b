/**
 * A grant that comes too late to use is given back before the call's next attempt, and the call
 * waits for that give-back: bounded like a reply (`replyTimeoutMs`, at most a TTL) and by the
 * caller's signal. Unbounded, a give-back its client never answered (a connection that went silent,
 * or node-redis 5 hung after a reset: docs/guarantees.md) held `acquire()` for ever, its
 * `timeoutMs` and its signal ignored; the fault suite's workers could not stop.
 *
 * Real redis-server, an ioredis client (no command timeout, so a silent connection never answers)
 * through a proxy in this process that delays the acquire's reply past the lease's validity (but
 * within `replyTimeoutMs`) and, once the give-back's release has gone through to Redis, swallows
 * every reply (the connection stays open, as in a partition).
 */
import assert from 'node:assert/strict';
import { createServer, type Server, Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisUnavailableError, Semaphore } from '../../src/index.js';
import { scripts } from '../../src/protocol/scripts.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';

let server: RedisServer;
let proxy: Server;
let port = 0;

/** What the proxy saw and does: one test at a time. */
const state = { acquireSeen: false, releaseSeen: false, silent: false };
const ACQUIRE = Buffer.from(scripts.semaphoreAcquire.sha1);
const RELEASE = Buffer.from(scripts.semaphoreRelease.sha1);
/** Past the lease's validity (ttlMs × (1 − driftFactor) = 1 s), within the reply bound (2 s). */
const LATE_MS = 1_400;

before(async () => {
  server = await startRedis();
  // Every script in the cache, so each call is one short EVALSHA the proxy can recognise.
  for (const script of Object.values(scripts)) await server.command('SCRIPT', 'LOAD', script.source);
  proxy = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(server.port, '127.0.0.1');
    let delayReplies = false;
    client.on('data', (chunk: Buffer) => {
      if (chunk.includes(ACQUIRE)) {
        state.acquireSeen = true;
        delayReplies = true;
      }
      if (chunk.includes(RELEASE)) state.releaseSeen = true;
      upstream.write(chunk);
      // The release reaches Redis; from now on no reply comes back.
      if (state.releaseSeen) state.silent = true;
    });
    upstream.on('data', (chunk: Buffer) => {
      if (state.silent) return;
      if (delayReplies) setTimeout(() => state.silent || client.write(chunk), LATE_MS);
      else client.write(chunk);
    });
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  port = typeof address === 'object' && address ? address.port : 0;
});

after(async () => {
  proxy.close();
  await server.stop();
});

async function silentAfterGiveBack(
  name: string,
  call: (semaphore: Semaphore, signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  Object.assign(state, { acquireSeen: false, releaseSeen: false, silent: false });
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  client.on('error', () => {});
  await client.connect();
  // The server check first, on the healthy connection (it is one EVALSHA too, not the acquire).
  const semaphore = new Semaphore(client, name, {
    limit: 1,
    ttlMs: 2_000,
    driftFactor: 0.5,
    replyTimeoutMs: 2_000,
    autoExtend: false,
  });
  await semaphore.isLocked();
  const stop = new AbortController();
  const started = performance.now();
  try {
    const outcome = await Promise.race([
      call(semaphore, stop.signal).then(
        () => 'granted',
        (error: unknown) => error,
      ),
      new Promise((resolve) => setTimeout(() => resolve('still waiting after 15 s'), 15_000)),
    ]);
    assert.ok(state.acquireSeen && state.releaseSeen, 'the grant came too late and was given back');
    assert.ok(
      outcome instanceof RedisUnavailableError,
      `ends with RedisUnavailableError, got ${String(outcome)}`,
    );
    assert.match(String((outcome as Error).message), /giving it back got no reply in time/);
    // The attempt's reply (1.4 s), then at most the give-back's bound (2 s), with room for a busy machine.
    assert.ok(performance.now() - started < 10_000);
  } finally {
    stop.abort();
    client.disconnect();
  }
}

test('acquire(): a too-late grant whose give-back is never answered ends the call, not hangs it', async () => {
  await silentAfterGiveBack('unanswered-give-back-acquire', (semaphore, signal) =>
    semaphore.acquire({ timeoutMs: 3_000, signal }),
  );
});

test('tryAcquire(): the same, for the one attempt', async () => {
  await silentAfterGiveBack('unanswered-give-back-try', (semaphore, signal) =>
    semaphore.tryAcquire({ signal }),
  );
});
