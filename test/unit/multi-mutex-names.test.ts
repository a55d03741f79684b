/**
 * A MultiMutex's names, before anything reaches Redis: the checks (a typed error for bad input) and
 * the hash tag that decides whether names share a Redis Cluster slot. Pure: no Redis.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keySlot } from '../../src/adapters/key-slot.js';
import { nameHashTag } from '../../src/primitives/multi-mutex.js';
import { lockKeys } from '../../src/protocol/keys.js';
import { checkNames } from '../../src/validation.js';

test('names: a non-empty array of distinct lock names, else TypeError or RangeError naming it', () => {
  assert.deepEqual(checkNames('names', ['a', 'b']), ['a', 'b']);
  assert.ok(Object.isFrozen(checkNames('names', ['a'])));
  assert.throws(() => checkNames('names', []), { name: 'RangeError', message: /`names`.*an empty array/ });
  assert.throws(() => checkNames('names', 'a'), { name: 'TypeError', message: /`names`/ });
  assert.throws(() => checkNames('names', undefined), TypeError);
  assert.throws(() => checkNames('names', ['a', 3]), { name: 'TypeError', message: /`names\[1\]`/ });
  assert.throws(() => checkNames('names', ['a', '']), { name: 'RangeError', message: /`names\[1\]`/ });
  assert.throws(() => checkNames('names', ['a', 'b', 'a']), {
    name: 'RangeError',
    message: /`names\[2\]`.*duplicate/,
  });
  assert.throws(() => checkNames('names', ['}a']), RangeError);
});

test('the hash tag of a name is its keys’ slot: names with one tag share a slot', () => {
  const slot = (name: string) => keySlot(lockKeys('locksmith', name).lock);
  for (const [name, tag] of [
    ['order', 'order'],
    ['order}1', 'order'],
    ['order}sku}2', 'order'],
    ['{x}', '{x'],
  ] as const) {
    assert.equal(nameHashTag(name), tag);
  }
  assert.equal(slot('order}1'), slot('order}2'));
  assert.equal(slot('order}1'), slot('order'));
  assert.equal(keySlot(lockKeys('locksmith', 'order}1').multiWaiting), slot('order'));
  assert.notEqual(nameHashTag('order:1'), nameHashTag('order:2'));
});
