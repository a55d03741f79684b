/**
 * The fault proxy must behave like a slow network, not a broken one: under random delays it keeps
 * every byte in order. A reordering proxy made a client pair replies with the wrong commands, which
 * looked like a lock handing out a stale fencing token (found in the abort storm scenario).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';

let server: RedisServer;
let proxy: FaultProxy;

before(async () => {
  server = await startRedis();
  proxy = await FaultProxy.start({ port: server.port });
});

after(async () => {
  await proxy.close();
  await server.stop();
});

test('replies come back in order under random per-frame delays', async () => {
  proxy.delay = () => Math.random() * 3;
  const client = new Redis(proxy.url, { maxRetriesPerRequest: null });
  try {
    for (let round = 0; round < 5; round += 1) {
      // Sent in bursts spread over a few milliseconds, so frames are delayed independently.
      const replies: Promise<number>[] = [];
      for (let i = 0; i < 200; i += 1) {
        replies.push(client.incr('ordered'));
        if (i % 20 === 0) await new Promise((r) => setImmediate(r));
      }
      const values = await Promise.all(replies);
      const start = values[0] as number;
      assert.deepEqual(
        values,
        values.map((_, i) => start + i),
        'each INCR got its own reply',
      );
    }
  } finally {
    client.disconnect();
  }
});
