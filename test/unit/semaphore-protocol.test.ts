/**
 * The Semaphore's typed calls: KEYS and ARGV placed as the headers of semaphore-*.lua say, and
 * replies decoded into typed results (malformed ones refused). No Redis here.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { UnexpectedReplyError } from '../../src/errors.js';
import { lockKeys, semaphoreKeys } from '../../src/protocol/keys.js';
import { PLACE_TOLERANCE_MS } from '../../src/protocol/redlock.js';
import {
  QUORUM_FENCE_STEP_US,
  semaphoreAcquire,
  semaphoreRelease,
  semaphoreReserveFences,
} from '../../src/protocol/semaphore.js';
import { semaphoreCalls } from '../fixtures/semaphore-calls.js';

const keys = lockKeys('p', 'job');
const extra = semaphoreKeys(keys);
const token = 'a'.repeat(32);
const calls = semaphoreCalls(keys, token);

describe('Semaphore protocol', () => {
  test("keys and arguments are placed as the headers say, every key in the name's hash tag", () => {
    const queue = [keys.lock, keys.fence, keys.queue, extra.waiters, extra.limit];
    // A Semaphore's calls name the token's release tombstone but read or write none ('' stamps).
    assert.deepEqual(calls.semaphoreAcquire.keys, [...queue, keys.releasedPrefix + token]);
    // Nor a fencing step, a place, or a cap: microseconds, arrival order, a stored limit in force.
    const none = ['', '', '', '', ''];
    assert.deepEqual(calls.semaphoreAcquire.args, [
      token,
      '1000',
      '2',
      '3',
      '300',
      'g',
      'host:1',
      '',
      ...none,
    ]);
    assert.deepEqual(calls.semaphoreRelease.keys, [...queue, keys.lastReleased, keys.releasedPrefix + token]);
    assert.deepEqual(calls.semaphoreRelease.args, [token, '3', '', '', '', '']);
    assert.deepEqual(calls.semaphoreExtend.keys, [keys.lock, keys.fence]);
    assert.deepEqual(calls.semaphoreExtend.args, [token, '1000', '0']);
    // A local batch's reservation is the same script, reserving ARGV[3] tokens.
    const reserve = semaphoreReserveFences(keys, { token, ttlMs: 1000, count: 5 });
    assert.equal(reserve.script, calls.semaphoreExtend.script);
    assert.deepEqual(reserve.keys, [keys.lock, keys.fence]);
    assert.deepEqual(reserve.args, [token, '1000', '5']);
    assert.deepEqual(calls.semaphoreInspect.keys, [keys.lock, keys.fence, keys.queue, extra.limit]);
    assert.deepEqual(calls.semaphoreSetLimit.args, ['4']);
    for (const key of Object.values(extra)) assert.equal(key.match(/\{([^}]*)\}/)?.[1], 'job');
  });

  test("a RedlockSemaphore's calls: whole-second fencing steps, the call's place, the limit capped", () => {
    const all = { ...keys, ...extra };
    const acquire = semaphoreAcquire(all, {
      token,
      ttlMs: 1000,
      permits: 1,
      label: '',
      limit: 3,
      entryTtlMs: 300,
      grantChannel: 'g',
      stamp: 7,
      fenceStepUs: QUORUM_FENCE_STEP_US,
      line: { place: 1_800_000_000_000, placeAgeMs: 4.6 },
      capStoredLimit: true,
    });
    assert.deepEqual(acquire.args.slice(7), [
      '7',
      '1000000',
      '1800000000000',
      '5',
      String(PLACE_TOLERANCE_MS),
      '1',
    ]);
    const release = semaphoreRelease(all, {
      token,
      limit: 3,
      fenceStepUs: QUORUM_FENCE_STEP_US,
      capStoredLimit: true,
    });
    assert.deepEqual(release.args, [token, '3', '', '', '1000000', '1']);
  });

  test('acquire replies: acquired, queued, over the limit', () => {
    const decode = calls.semaphoreAcquire.decode;
    assert.deepEqual(decode([1, 17, 5]), { acquired: true, fencingToken: 17, serverTimeMs: 5 });
    assert.deepEqual(decode([0, -1, 5]), { acquired: false, waitBoundMs: -1, serverTimeMs: 5 });
    assert.deepEqual(decode([-1, 2, 5]), { acquired: false, overLimit: 2, serverTimeMs: 5 });
    assert.throws(() => decode([1, 17]), UnexpectedReplyError);
  });

  test('inspect replies: holders earliest expiry first, a foreign key, malformed replies', () => {
    const decode = calls.semaphoreInspect.decode;
    const state = decode([3, 9, 2, '', 800, 'x', 2, 8, 500, 'host:1', 'y', 1, 9, 800, '']);
    assert.equal(state.locked, true);
    assert.equal(state.ownerToken, 'x');
    assert.equal(state.remainingTtlMs, 500);
    assert.equal(state.permitsHeld, 3);
    assert.equal(state.limit, 3);
    assert.equal(state.queueLength, 2);
    assert.equal(state.holderLabel, 'host:1', 'the first holder’s label');
    assert.deepEqual(state.holders[1], {
      token: 'y',
      permits: 1,
      fencingToken: 9,
      remainingTtlMs: 800,
      label: undefined,
    });
    const free = decode([3, 0, 0, '', -2]);
    assert.deepEqual(
      [free.locked, free.ownerToken, free.remainingTtlMs, free.holders],
      [false, undefined, undefined, []],
    );
    const foreign = decode([3, 0, 0, 'mutex-owner', 400]);
    assert.deepEqual(
      [foreign.locked, foreign.ownerToken, foreign.remainingTtlMs],
      [true, 'mutex-owner', 400],
    );
    assert.throws(() => decode([3, 0, 0, '', -2, 'x', 1]), UnexpectedReplyError);
    assert.throws(() => decode('nope'), UnexpectedReplyError);
  });
});
