/**
 * Lock names may contain `{` and `}`: the two properties that makes sound, checked on generated
 * names (the argument is in src/protocol/keys.ts; test/integration/lock-names.test.ts asks a real
 * Redis for the slots).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { lockKeys } from '../../src/protocol/keys.js';
import {
  acceptedName,
  acceptedPrefix,
  clientIdArbitrary,
  everyKeyOf,
  hashedPartOf,
} from '../fixtures/lock-key-names.js';

/** Splits a key as the proof does: prefix before the first `{`, name up to the last `}`. */
function readBack(key: string): { prefix: string; name: string } {
  const open = key.indexOf('{');
  const close = key.lastIndexOf('}');
  return { prefix: key.slice(0, open - 1), name: key.slice(open + 1, close) };
}

describe('lock keys with braces in the name', () => {
  test('no suffix contains `}` (the proof below rests on it)', () => {
    fc.assert(
      fc.property(acceptedPrefix, acceptedName, clientIdArbitrary, (prefix, name, clientId) => {
        const base = `${prefix}:{${name}}`;
        for (const key of everyKeyOf(prefix, name, clientId)) {
          assert.ok(key.startsWith(base), key);
          assert.ok(!key.slice(base.length).includes('}'), `suffix of ${key}`);
        }
      }),
    );
  });

  test('every key reads back as its prefix and name (first `{`, last `}`)', () => {
    fc.assert(
      fc.property(acceptedPrefix, acceptedName, clientIdArbitrary, (prefix, name, clientId) => {
        for (const key of everyKeyOf(prefix, name, clientId)) {
          assert.deepEqual(readBack(key), { prefix, name }, key);
        }
      }),
    );
  });

  test('two different names or prefixes never share a key', () => {
    fc.assert(
      fc.property(
        acceptedPrefix,
        acceptedName,
        acceptedPrefix,
        acceptedName,
        clientIdArbitrary,
        (prefixA, nameA, prefixB, nameB, clientId) => {
          fc.pre(prefixA !== prefixB || nameA !== nameB);
          const keysOfA = new Set(everyKeyOf(prefixA, nameA, clientId));
          for (const key of everyKeyOf(prefixB, nameB, clientId)) assert.ok(!keysOfA.has(key), key);
        },
      ),
      { numRuns: 2_000 },
    );
    // The near misses a generator might not find: a name that spells another lock's suffix.
    assert.notEqual(lockKeys('p', 'a}:fence').lock, lockKeys('p', 'a').fence);
    assert.notEqual(lockKeys('p', 'a').lock, lockKeys('p', 'a}').lock);
    assert.equal(lockKeys('p', 'a}:fence').lock, 'p:{a}:fence}');
  });

  test('one lock has one hash tag: the name up to its first `}`', () => {
    fc.assert(
      fc.property(acceptedPrefix, acceptedName, clientIdArbitrary, (prefix, name, clientId) => {
        const firstClose = name.indexOf('}');
        const tag = firstClose === -1 ? name : name.slice(0, firstClose);
        for (const key of everyKeyOf(prefix, name, clientId)) assert.equal(hashedPartOf(key), tag, key);
      }),
    );
  });

  test('a name starting with `}` would have no hash tag (why checkName refuses it)', () => {
    const keys = everyKeyOf('p', '}x');
    for (const key of keys) assert.equal(hashedPartOf(key), key, 'hashed whole');
    assert.equal(new Set(keys.map(hashedPartOf)).size, keys.length);
  });
});
