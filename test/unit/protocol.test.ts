/**
 * The protocol layer's typed calls: each builds KEYS and ARGV in the order its script's header gives
 * (counts checked against the header, which scripts/embed-lua.mjs reads), and decodes replies into
 * typed results, refusing malformed ones. No Redis here: test/integration/scripts.test.ts checks the
 * scripts themselves against a real server, and every suite runs them.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { UnexpectedReplyError } from '../../src/errors.js';
import { scriptCall } from '../../src/protocol/call.js';
import { fencedWriteCall } from '../../src/protocol/fenced-write.js';
import { raiseFence } from '../../src/protocol/fencing-counter.js';
import {
  decodeHandOff,
  handOffAcquire,
  handOffExtend,
  handOffInspect,
  handOffRelease,
} from '../../src/protocol/hand-off.js';
import { lockKeys, reentrantKeys, semaphoreKeys } from '../../src/protocol/keys.js';
import { multiAcquire, multiExtend, multiRelease } from '../../src/protocol/multi-mutex.js';
import { rwDowngrade } from '../../src/protocol/read-write-lock.js';
import { PLACE_TOLERANCE_MS, redlockAcquire, redlockRelease } from '../../src/protocol/redlock.js';
import {
  reentrantAcquire,
  reentrantExtend,
  reentrantInspect,
  reentrantRelease,
} from '../../src/protocol/reentrant-mutex.js';
import { scripts } from '../../src/protocol/scripts.js';
import { serverCheck } from '../../src/protocol/server-check.js';
import { semaphoreCalls } from '../fixtures/semaphore-calls.js';

const dir = join(import.meta.dirname, '../../src/protocol/scripts');
const keys = lockKeys('p', 'job');
const token = 'a'.repeat(32);
const rkeys = { ...keys, ...reentrantKeys(keys) };

const acquireParams = {
  token,
  ttlMs: 1000,
  entryTtlMs: 300,
  grantChannel: 'g',
  label: 'host:1',
  maybeQueued: false,
  barging: true,
  arrivalMs: 1_795_000_000_050,
};

/** Every call builder, with sample parameters. */
const calls = {
  handOffAcquire: handOffAcquire(keys, acquireParams),
  handOffExtend: handOffExtend(keys, { token, ttlMs: 1000 }),
  handOffRelease: handOffRelease(keys, {
    token,
    skipUnreached: true,
    handOffAfterMs: 5,
    quiet: true,
    multiNames: true,
  }),
  handOffInspect: handOffInspect(keys),
  fencedWrite: fencedWriteCall({ key: 'r', fencingToken: 7, value: 'v' }),
  raiseFence: raiseFence(keys, { atLeast: 1_700_000_000_000_123 }),
  redlockAcquire: redlockAcquire(keys, {
    ...acquireParams,
    barging: false,
    place: 1_795_000_000_123,
    placeAgeMs: 40.6,
    handOffAfterMs: 5,
    nowMs: 1_795_000_000_200.5,
    stamp: 1_795_000_000_200_123,
  }),
  redlockRelease: redlockRelease(keys, {
    token,
    skipUnreached: true,
    handOffAfterMs: 5,
    nowMs: 1_795_000_000_300,
    tombstone: { stamp: 1_795_000_000_300_456, keepMs: 1000 },
  }),
  serverCheck: serverCheck('p:probe'),
  reentrantAcquire: reentrantAcquire(rkeys, {
    token,
    ttlMs: 1000,
    entryTtlMs: 300,
    grantChannel: 'g',
    label: 'host:1',
    maybeQueued: true,
    barging: true,
  }),
  reentrantRelease: reentrantRelease(rkeys, { token, skipUnreached: true }),
  reentrantExtend: reentrantExtend(rkeys, { token, ttlMs: 1000 }),
  reentrantInspect: reentrantInspect(rkeys),
  rwDowngrade: rwDowngrade({ ...keys, ...semaphoreKeys(keys) }, { token, limit: 9 }),
  ...semaphoreCalls(keys, token),
  // One name: the headers declare one name's keys (six, or one for multi-extend); more names
  // repeat them.
  multiAcquire: multiAcquire([keys], {
    token,
    ttlMs: 1000,
    entryTtlMs: 300,
    channel: 'g',
    label: 'host:1',
    sentBefore: true,
    arrivalMs: 1795000000050,
    handOffAfterMs: 50,
    reservationTtlMs: 1000,
  }),
  multiRelease: multiRelease([keys], token),
  multiExtend: multiExtend([keys], token, 1000),
};

/** The highest n of `-- KEYS[n]` / `-- ARGV[n]` lines in a .lua file's header. */
function declared(file: string, kind: 'KEYS' | 'ARGV'): number {
  const source = readFileSync(join(dir, file), 'utf8');
  const header = source.slice(0, source.search(/^(?!--)/m));
  const numbers = [...header.matchAll(new RegExp(`^-- ${kind}\\[(\\d+)\\]`, 'gm'))].map((m) => Number(m[1]));
  return Math.max(0, ...numbers);
}

describe('typed script calls', () => {
  test('every script has a call builder, and its counts are what the .lua header declares', () => {
    assert.deepEqual(Object.keys(calls).sort(), Object.keys(scripts).sort());
    for (const [name, call] of Object.entries(calls)) {
      const file = `${call.script.name}.lua`;
      assert.ok(readdirSync(dir).includes(file), file);
      assert.equal(call.script, scripts[name as keyof typeof scripts]);
      assert.equal(call.keys.length, declared(file, 'KEYS'), `${file}: KEYS`);
      assert.equal(call.args.length, declared(file, 'ARGV'), `${file}: ARGV`);
      assert.ok(call.keys.length > 0, `${file}: at least one key (it picks the server and the slot)`);
    }
  });

  test('keys and arguments are placed as the headers say', () => {
    assert.deepEqual(calls.handOffAcquire.keys, [
      keys.lock,
      keys.fence,
      keys.queue,
      keys.waiting,
      keys.reserved,
    ]);
    assert.deepEqual(calls.handOffAcquire.args, [
      token,
      '1000',
      '300',
      'g',
      '0',
      '1',
      'host:1',
      '1795000000050',
    ]);
    assert.deepEqual(calls.handOffRelease.keys, [
      keys.lock,
      keys.fence,
      keys.queue,
      keys.waiting,
      keys.multiWaiting,
      keys.reserved,
    ]);
    assert.deepEqual(calls.handOffRelease.args, [token, '1', '5', '1', '1']);
    const fair = { token, skipUnreached: false, handOffAfterMs: 0, multiNames: false };
    assert.deepEqual(handOffRelease(keys, fair).args, [token, '0', '0', '0', '0']);
    assert.deepEqual(calls.raiseFence.keys, [keys.fence, keys.lock]);
    const other = lockKeys('p', 'other');
    const nameKeys = (k: typeof keys) => [k.lock, k.fence, k.queue, k.waiting, k.multiWaiting, k.reserved];
    assert.deepEqual(
      multiAcquire([keys, other], {
        token,
        ttlMs: 1000,
        entryTtlMs: 300,
        channel: 'g',
        label: 'host:1',
        sentBefore: false,
        arrivalMs: 0,
        handOffAfterMs: 50,
        reservationTtlMs: 1000,
      }).keys,
      [...nameKeys(keys), ...nameKeys(other)],
    );
    assert.deepEqual(calls.multiAcquire.args, [
      token,
      '1000',
      '300',
      'g',
      'host:1',
      '1',
      '1795000000050',
      '50',
      '1000',
    ]);
    assert.deepEqual(multiExtend([keys, other], token, 1000).keys, [keys.lock, other.lock]);
    assert.deepEqual(multiRelease([keys, other], token).keys, [...nameKeys(keys), ...nameKeys(other)]);
    const tombstone = `${keys.releasedPrefix}${token}`;
    assert.deepEqual(calls.redlockAcquire.keys, [keys.lock, keys.fence, keys.line, keys.waiting, tombstone]);
    assert.deepEqual(calls.redlockAcquire.args, [
      token,
      '1000',
      '300',
      'g',
      '0',
      '0',
      '1795000000123',
      '5',
      '1795000000200',
      '41',
      String(PLACE_TOLERANCE_MS),
      'host:1',
      '1795000000200123',
    ]);
    assert.deepEqual(calls.redlockRelease.keys, [keys.lock, keys.fence, keys.line, keys.waiting, tombstone]);
    assert.deepEqual(calls.redlockRelease.args, [
      token,
      '1',
      '5',
      '1795000000300',
      String(PLACE_TOLERANCE_MS),
      '1795000000300456',
      '1000',
    ]);
    assert.deepEqual(calls.raiseFence.args, ['1700000000000123']);
    assert.deepEqual(calls.raiseFence.decode([1, 1_700_000_000_000_124]), {
      raised: true,
      counter: 1_700_000_000_000_124,
    });
    assert.deepEqual(calls.raiseFence.decode([0, 1_700_000_000_000_125]), {
      raised: false,
      counter: 1_700_000_000_000_125,
    });
    assert.throws(() => raiseFence(keys, { atLeast: 2 ** 53 }), /safe non-negative integer/);
    assert.deepEqual(calls.reentrantAcquire.keys, [
      keys.lock,
      keys.fence,
      keys.queue,
      keys.waiting,
      rkeys.holds,
    ]);
    assert.deepEqual(calls.reentrantAcquire.args, [token, '1000', '300', 'g', '1', '1', 'host:1']);
    assert.deepEqual(calls.reentrantRelease.keys, [
      keys.lock,
      keys.fence,
      keys.queue,
      keys.waiting,
      rkeys.holds,
    ]);
    assert.deepEqual(calls.reentrantExtend.keys, [keys.lock, rkeys.holds]);
    assert.deepEqual(calls.reentrantInspect.keys, [keys.lock, keys.fence, keys.queue, rkeys.holds]);
    assert.deepEqual(calls.rwDowngrade.keys, [
      keys.lock,
      keys.fence,
      keys.queue,
      semaphoreKeys(keys).waiters,
    ]);
    assert.deepEqual(calls.rwDowngrade.args, [token, '9']);
    assert.deepEqual(calls.fencedWrite.keys, ['r', 'r:fence']);
    assert.deepEqual(calls.fencedWrite.args, ['7', 'v']);
  });

  test('a builder that disagrees with the header is refused at once', () => {
    assert.throws(
      () => scriptCall(scripts.handOffExtend, ['a'], ['t', '1', '0'], () => 0),
      /takes 2 keys and 3/,
    );
    assert.throws(() => scriptCall(scripts.handOffExtend, ['a', 'b'], ['t'], () => 0), /was given 2 and 1/);
  });

  test('replies decode into typed results', () => {
    assert.equal(calls.handOffRelease.decode(2), 'waiter-asleep');
    assert.equal(calls.handOffRelease.decode(1), 'released');
    assert.equal(calls.handOffRelease.decode(0), 'not-held');
    assert.equal(calls.handOffExtend.decode(1), true);
    assert.deepEqual(calls.handOffInspect.decode([token, 900, 5, 'host:1', 2]), {
      locked: true,
      ownerToken: token,
      remainingTtlMs: 900,
      lastFencingToken: 5,
      holderLabel: 'host:1',
      queueLength: 2,
    });
    assert.equal(
      calls.handOffInspect.decode([token, 900, 5, '', 2]).holderLabel,
      undefined,
      "'' is no label",
    );
    assert.deepEqual(calls.handOffInspect.decode(['', -2, 0, '', 0]), {
      locked: false,
      ownerToken: undefined,
      remainingTtlMs: undefined,
      lastFencingToken: 0,
      holderLabel: undefined,
      queueLength: 0,
    });
    assert.deepEqual(calls.handOffAcquire.decode([1, 7, 1_700_000_000_123]), {
      acquired: true,
      fencingToken: 7,
      serverTimeMs: 1_700_000_000_123,
    });
    assert.deepEqual(calls.handOffAcquire.decode([0, 250, 5]), {
      acquired: false,
      waitBoundMs: 250,
      serverTimeMs: 5,
    });
    assert.equal(calls.handOffInspect.decode(['', -2, 3, '', 4]).queueLength, 4);
    const other = 'b'.repeat(32);
    assert.deepEqual(calls.reentrantInspect.decode([token, 900, 5, 'host:1', 0, other]), {
      locked: true,
      ownerToken: token,
      remainingTtlMs: 900,
      lastFencingToken: 5,
      holderLabel: 'host:1',
      queueLength: 0,
      holdCount: 2,
      holdTokens: [token, other],
    });
    assert.deepEqual(calls.reentrantInspect.decode(['', -2, 5, '', 1]), {
      locked: false,
      ownerToken: undefined,
      remainingTtlMs: undefined,
      lastFencingToken: 5,
      holderLabel: undefined,
      queueLength: 1,
      holdCount: 0,
      holdTokens: [],
    });
    assert.deepEqual(calls.reentrantAcquire.decode([1, 7, 9]), {
      acquired: true,
      fencingToken: 7,
      serverTimeMs: 9,
    });
    assert.equal(calls.reentrantRelease.decode(0), false);
    assert.deepEqual(calls.fencedWrite.decode([0, 9]), { written: false, highestToken: 9 });
    assert.deepEqual(calls.serverCheck.decode([1, '7.0.15']), { supported: true, version: '7.0.15' });
    assert.deepEqual(calls.serverCheck.decode([0, 'ERR unknown command']), {
      supported: false,
      detail: 'ERR unknown command',
    });
  });

  test('malformed replies are UnexpectedReplyError, never a silent misread', () => {
    for (const [call, reply] of [
      [calls.handOffAcquire, [1]],
      [calls.handOffAcquire, 'OK'],
      [calls.handOffRelease, null],
      [calls.handOffAcquire, [1, 2]],
      [calls.handOffInspect, ['', -2, 0]],
      [calls.handOffInspect, [7, 1, 1, 0]],
      [calls.reentrantInspect, ['', -2, 0]],
      [calls.reentrantInspect, [token, 1, 1, 0, 5]],
      [calls.reentrantAcquire, [1, 2]],
    ] as const) {
      assert.throws(() => call.decode(reply), UnexpectedReplyError, JSON.stringify(reply));
    }
  });

  test('hand-off messages: exact integers, addressed to one token', () => {
    const fence = 2 ** 53 - 1;
    assert.deepEqual(decodeHandOff(`${token}:${fence}:1700000000123`, token), {
      fencingToken: fence,
      grantServerMs: 1_700_000_000_123,
    });
    assert.equal(decodeHandOff(`${'b'.repeat(32)}:1:2`, token), undefined, 'another waiter');
    assert.equal(decodeHandOff(`${token}x:1:2`, token), undefined, 'a longer token');
    assert.equal(decodeHandOff(`${token}:1`, token), undefined, 'no server time');
    assert.equal(
      decodeHandOff(`${token}:1e3:2`.replace('1e3', '9007199254740993'), token),
      undefined,
      'not exact',
    );
  });
});
