/**
 * A client that pairs a reply with the wrong command must not make Locksmith trust it: every script
 * call on a node-redis client carries a nonce its script echoes (protocol/script.ts, adapters/eval-script.ts), and a reply
 * without the call's nonce rejects the call (`MismatchedReplyError`), as a lost reply would.
 *
 * The client is node-redis 5.12, whose defect this is (tools/repro/node-redis-write-after-reset.ts):
 * a command sent while a reset waits unread in its socket is written into the dead socket after the
 * reset was handled, and joins the commands waiting for a reply; on the next connection every reply
 * goes to the command sent before its own. Real redis-server, a proxy in this process that resets
 * the client's connection on demand; the order of events is the event loop's, not a sleep's.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { evalScriptThen, MismatchedReplyError } from '../../src/adapters/eval-script.js';
import { nodeRedisDriver } from '../../src/adapters/node-redis.js';
import { Mutex } from '../../src/index.js';
import type { ScriptCall } from '../../src/protocol/call.js';
import { type HandOffAcquireResult, handOffAcquire } from '../../src/protocol/hand-off.js';
import { lockKeys } from '../../src/protocol/keys.js';
import { scripts } from '../../src/protocol/scripts.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { type ResetProxy, startResetProxy } from '../../tools/reset-proxy.js';
import { clientKinds } from '../fixtures/clients.js';

let server: RedisServer;
let proxy: ResetProxy;

before(async () => {
  server = await startRedis();
  proxy = await startResetProxy(server.port);
});

after(async () => {
  await proxy.close();
  await server.stop();
});

function acquire(name: string, token: string): ScriptCall<HandOffAcquireResult> {
  return handOffAcquire(lockKeys('locksmith', name), {
    token,
    ttlMs: 10_000,
    entryTtlMs: 0,
    grantChannel: `locksmith:granted:${token}`,
    label: '',
    maybeQueued: false,
    barging: true,
  });
}

test('node-redis 5 pairs a reply with the wrong call after a reset: the call rejects, no other call’s grant is taken', async () => {
  const { createClient } = await import('redis5');
  const client = createClient({ url: proxy.url });
  client.on('error', () => {});
  await client.connect();
  const driver = nodeRedisDriver(client as never);
  const run = <T>(call: ScriptCall<T>) =>
    evalScriptThen(driver, call.script, call.keys, call.args, call.decode);
  try {
    // `held` is someone else's: an acquire of it cannot be granted.
    const other = await run(acquire('held', 'other'));
    assert.equal(other.acquired, true);

    const settled: Record<string, string> = {};
    const note = (what: string, promise: Promise<HandOffAcquireResult>) =>
      promise.then(
        (result) => {
          settled[what] = result.acquired ? 'acquired' : 'not acquired';
        },
        (error: unknown) => {
          settled[what] = error instanceof MismatchedReplyError ? 'mismatched' : `failed: ${String(error)}`;
        },
      );
    const sent: Promise<void>[] = [];
    await new Promise<void>((resolve) =>
      // In a timer, the reset and the first call: the poll phase after it reads the reset, the check
      // phase then writes the first call into the dead socket (node-redis 5).
      setTimeout(() => {
        proxy.resetNow();
        sent.push(note('first', run(acquire('first', 'a'))));
        // After that write, before the reconnection: queued for the new connection, behind the
        // handshake. `held`'s acquire gets the reply of the one after it, an acquire of a free lock.
        setImmediate(() => {
          sent.push(note('held', run(acquire('held', 'b'))));
          sent.push(note('free', run(acquire('free', 'c'))));
          resolve();
        });
      }, 1),
    );
    // `held`'s call settles once the free lock's reply came back (to it, or to the handshake).
    await Promise.race([sent[1], new Promise((resolve) => setTimeout(resolve, 5_000))]);
    assert.notEqual(settled.held, 'acquired', 'an acquire of a held lock took another call’s grant');
    assert.equal(settled.held, 'mismatched', JSON.stringify(settled));
  } finally {
    client.destroy();
  }
});

// The nonce costs Redis about 15k instructions per call (docs/performance.md): only clients that
// need it pay it. Which script text a client ran is in the server's script cache after a flush.
for (const kind of clientKinds) {
  const checked = kind.name.startsWith('node-redis');
  test(`${kind.name} runs the ${checked ? 'checked script, with a nonce' : 'plain script, without a nonce'}`, async () => {
    const user = await kind.create(server.url);
    try {
      await user.command('SCRIPT', 'FLUSH');
      const lock = new Mutex(user.client, `script-text-${kind.name}`, { ttlMs: 10_000 });
      await (await lock.acquire()).release();
      const ran = scripts.handOffAcquire;
      const cached = (await user.command('SCRIPT', 'EXISTS', ran.sha1, ran.checked.sha1)) as unknown[];
      assert.deepEqual(cached.map(Number), checked ? [0, 1] : [1, 0]);
    } finally {
      await user.close();
    }
  });
}
