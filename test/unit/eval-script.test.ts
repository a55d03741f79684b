/**
 * The script runner's NOSCRIPT fallback (src/adapters/eval-script.ts), over a driver that stands for
 * a client: pure logic, no Redis.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RedisDriver } from '../../src/adapters/driver.js';
import { evalScript } from '../../src/adapters/eval-script.js';
import { ClientClosedError } from '../../src/errors.js';
import { scripts } from '../../src/protocol/scripts.js';

function driverWith(closed: () => string | undefined, sent: string[]): RedisDriver {
  return {
    kind: 'node-redis',
    checksReplies: true,
    topology: 'standalone',
    keyPrefix: '',
    evalSha: () => {
      sent.push('evalsha');
      return Promise.reject(new Error('NOSCRIPT No matching script. Please use EVAL.'));
    },
    // The script's envelope echoes the call's nonce, its last argument (protocol/script.ts).
    eval: (_source: string, _keys: readonly string[], args: readonly string[]) => {
      sent.push('eval');
      return Promise.resolve([args.at(-1), 1]);
    },
    waitForReplicas: () => Promise.reject(new Error('not used')),
    closedReason: closed,
    disconnectedReason: () => undefined,
    openSubscriber: () => Promise.reject(new Error('not used')),
  } as RedisDriver;
}

test('NOSCRIPT falls back to the source while the client is open', async () => {
  const sent: string[] = [];
  assert.equal(
    await evalScript(
      driverWith(() => undefined, sent),
      scripts.handOffExtend,
      [],
      [],
    ),
    1,
  );
  assert.deepEqual(sent, ['evalsha', 'eval']);
});

// Found under load: a Redlock release settled on a quorum left one node's EVALSHA in flight; its
// NOSCRIPT came back after the caller's quit(), the source was written after the QUIT, and ioredis
// rejected the caller's quit() ("Connection is closed").
test('NOSCRIPT after the client began closing writes nothing more: CLIENT_CLOSED', async () => {
  const sent: string[] = [];
  let closing: string | undefined;
  const driver = driverWith(() => closing, sent);
  const running = evalScript(driver, scripts.handOffExtend, [], []);
  closing = 'the ioredis client is closing (quit() or disconnect() was called)';
  await assert.rejects(running, (error: unknown) => error instanceof ClientClosedError);
  assert.deepEqual(sent, ['evalsha']);
});
