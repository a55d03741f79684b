/**
 * How a client's rejection is read: what a retry cannot fix is a `LockError`, anything else may pass.
 * Issue #20 item 10: node-redis 5 on Redis before 7.2 paired the error reply of its own reconnect
 * handshake (`CLIENT SETINFO`) with a script call in flight; Locksmith reported it as the server
 * refusing its command (`RedisCommandError`, never retried).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { classifyRedisError } from '../../src/adapters/classify-error.js';
import type { RedisDriver } from '../../src/adapters/driver.js';
import { ClientClosedError, LockError, RedisCommandError } from '../../src/errors.js';

const open = { closedReason: () => undefined } as unknown as RedisDriver;

describe('classifyRedisError', () => {
  test("an error reply no script call can get (another command's) may pass: not a refusal of ours", () => {
    for (const message of [
      "ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.",
      "ERR Unknown subcommand or wrong number of arguments for 'SETINFO'. Try CLIENT HELP",
      'NOPROTO unsupported protocol version',
    ]) {
      const classified = classifyRedisError(open, new Error(message));
      assert.ok(!(classified instanceof LockError), `${message}: ${String(classified)}`);
      assert.match(String((classified as Error).message), /another command's reply/);
      assert.equal((classified as Error).cause instanceof Error, true);
    }
  });

  test('a WAIT answered by a node that is a replica now (a slot map behind a failover) may pass', () => {
    const error = new Error(
      'ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a ' +
        'replica is configured to be writable (which is not the default) writes to replicas are just ' +
        'local and are not propagated.',
    );
    assert.equal(classifyRedisError(open, error), error);
    assert.ok(
      !(classifyRedisError(open, new Error('ERR max number of clients reached')) instanceof LockError),
    );
  });

  test('the server refusing a script call is a RedisCommandError; a closed client a ClientClosedError', () => {
    for (const message of [
      "NOPERM this user has no permissions to run the 'evalsha' command",
      'WRONGTYPE Operation against a key holding the wrong kind of value script: 3e5b',
      'ERR user_script:12: Script attempted to access nonexistent global variable',
    ]) {
      assert.ok(classifyRedisError(open, new Error(message)) instanceof RedisCommandError, message);
    }
    const closed = { closedReason: () => 'closed' } as unknown as RedisDriver;
    assert.ok(classifyRedisError(closed, new Error('x')) instanceof ClientClosedError);
  });
});
