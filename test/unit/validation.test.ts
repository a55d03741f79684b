import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  checkCount,
  checkMs,
  checkName,
  checkOptionsObject,
  checkPrefix,
  checkTtlMs,
  describeValue,
} from '../../src/validation.js';

describe('validation messages name the argument and the bad value', () => {
  test('negative TTL', () => {
    assert.throws(() => checkMs('ttlMs', -5), {
      name: 'RangeError',
      message: 'Expected `ttlMs` to be a positive integer of milliseconds, got `-5` (number)',
    });
  });

  test('wrong type is a TypeError', () => {
    assert.throws(() => checkMs('ttlMs', '100'), {
      name: 'TypeError',
      message: 'Expected `ttlMs` to be a positive integer of milliseconds, got `"100"` (string)',
    });
  });

  test('fractions, NaN, Infinity where not allowed, and too large', () => {
    for (const bad of [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, 0]) {
      assert.throws(() => checkMs('ttlMs', bad), RangeError, String(bad));
    }
    assert.equal(checkMs('timeoutMs', 0, { allowZero: true }), 0);
    assert.equal(
      checkMs('timeoutMs', Number.POSITIVE_INFINITY, { allowInfinity: true }),
      Number.POSITIVE_INFINITY,
    );
  });

  test('counts', () => {
    assert.throws(() => checkCount('retries', -1), RangeError);
    assert.throws(() => checkCount('retries', 0.5), RangeError);
    assert.equal(
      checkCount('retries', Number.POSITIVE_INFINITY, { allowInfinity: true }),
      Number.POSITIVE_INFINITY,
    );
  });

  test('names: empty, too long, not a string', () => {
    assert.throws(() => checkName('name', ''), {
      name: 'RangeError',
      message: 'Expected `name` to be a non-empty string of at most 1024 characters, got `""` (string)',
    });
    assert.throws(() => checkName('name', 'x'.repeat(1025)), RangeError);
    assert.throws(() => checkName('name', 42), TypeError);
    assert.equal(checkName('name', 'orders:42'), 'orders:42');
  });

  test('names may contain braces, but not start with `}` (the message says why)', () => {
    for (const name of ['a}b', '{x', '{', 'a{b}c', '{}', 'a}', `${'x'.repeat(1023)}}`]) {
      assert.equal(checkName('name', name), name);
    }
    for (const name of ['}', '}x', '}}', '}{a}']) {
      assert.throws(() => checkName('name', name), {
        name: 'RangeError',
        message: `Expected \`name\` to be a name that does not start with \`}\` (keys are \`prefix:{name}…\`, and Redis Cluster hashes only the text between the first \`{\` and the next \`}\`: a leading \`}\` leaves that hash tag empty, so each key of the lock would be hashed whole and land in a different slot), got \`${JSON.stringify(name)}\` (string)`,
      });
    }
  });

  test("prefixes: no braces at all (the lock's own `{` must come first)", () => {
    for (const prefix of ['{p}', 'p}', '{', 'a{b']) {
      assert.throws(() => checkPrefix('prefix', prefix), {
        name: 'RangeError',
        message: `Expected \`prefix\` to be a non-empty string of at most 1024 characters without \`{\` or \`}\`, got \`${JSON.stringify(prefix)}\` (string)`,
      });
    }
    assert.throws(() => checkPrefix('prefix', ''), RangeError);
    assert.throws(() => checkPrefix('prefix', 7), TypeError);
    assert.equal(checkPrefix('prefix', 'app:locks'), 'app:locks');
  });

  test('options objects', () => {
    assert.throws(() => checkOptionsObject('options', 5, []), TypeError);
    assert.throws(() => checkOptionsObject('options', [], []), TypeError);
    assert.throws(() => checkOptionsObject('options', null, []), TypeError);
    assert.deepEqual(checkOptionsObject('options', undefined, []), {});
  });

  test('describeValue', () => {
    assert.equal(describeValue(null), '`null`');
    assert.equal(describeValue(1n), '`1n` (bigint)');
    assert.equal(describeValue([]), 'an empty array');
    assert.equal(describeValue([1, 2]), 'an array of 2');
    // A long string is quoted in part, with its length (a 1,025-character name was echoed whole).
    const long = 'n'.repeat(1_025);
    assert.equal(describeValue(long), `\`"${'n'.repeat(60)}"…\` (a string of 1025 characters)`);
    assert.equal(
      describeValue(() => 1),
      'a function',
    );
  });
});

// Issue 7, item 14.
describe('checkTtlMs', () => {
  test('refuses a TTL that leaves no usable validity, and says the minimum', () => {
    assert.throws(() => checkTtlMs('ttlMs', 3, 0.01), {
      name: 'RangeError',
      message:
        'Expected `ttlMs` to be at least 13 ms with driftFactor 0.01 (validity is ttlMs − ⌈ttlMs·driftFactor⌉ − 2 ms and must be at least 10 ms), got `3` (number)',
    });
    assert.equal(checkTtlMs('ttlMs', 13, 0.01), 13);
  });

  test('keeps the plain checks for type and range', () => {
    assert.throws(() => checkTtlMs('ttlMs', '100', 0.01), TypeError);
    assert.throws(() => checkTtlMs('ttlMs', -5, 0.01), {
      message: 'Expected `ttlMs` to be a positive integer of milliseconds, got `-5` (number)',
    });
  });
});
