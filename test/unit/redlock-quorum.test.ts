/** The pure rules of a Redlock quorum (src/redlock/quorum.ts) and its fan-out, without Redis. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fanOut } from '../../src/redlock/fan-out.js';
import { grantsKeepLimit, quorumFreeInMs, quorumSize, tally, verdict } from '../../src/redlock/quorum.js';

describe('Redlock quorum rules', () => {
  test('the quorum is ⌊N/2⌋+1', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(quorumSize), [1, 2, 2, 3, 3, 4, 4]);
  });

  test('a fan-out is decided as soon as a quorum won, or can no longer win', () => {
    const t = (won: number, held: number, failed: number) => ({ won, held, failed });
    assert.equal(verdict(t(2, 0, 0), 3), 'won');
    assert.equal(verdict(t(1, 0, 0), 3), 'open');
    assert.equal(verdict(t(1, 1, 0), 3), 'open');
    assert.equal(verdict(t(0, 2, 0), 3), 'held');
    assert.equal(verdict(t(1, 1, 1), 3), 'no-quorum');
    assert.equal(verdict(t(0, 0, 2), 3), 'no-quorum');
    assert.equal(verdict(t(3, 2, 0), 5), 'won');
    assert.equal(verdict(t(2, 2, 0), 5), 'open');
    assert.equal(verdict(t(0, 3, 0), 5), 'held');
    assert.equal(verdict(t(2, 2, 1), 5), 'no-quorum');
  });

  test("the servers' limits alone keep a semaphore's limit only while limit × (N − quorum) < quorum", () => {
    // [limit, servers, kept]: each server holds at most `limit`, each holder a quorum of servers.
    const cases: [number, number, boolean][] = [
      [1, 3, true],
      [2, 3, false],
      [1, 5, true],
      [2, 5, false],
      [2, 4, true],
      [3, 4, false],
      [7, 2, true],
      [1, 1, true],
    ];
    for (const [limit, servers, kept] of cases)
      assert.equal(grantsKeepLimit(limit, servers), kept, `limit ${limit} on ${servers} servers`);
  });

  test('tally counts errors and timeouts as failed, pending as nothing', () => {
    assert.deepEqual(
      tally([
        { node: 0, outcome: 'won' },
        { node: 1, outcome: 'held' },
        { node: 2, outcome: 'error', error: new Error('x') },
        { node: 3, outcome: 'timed-out' },
        { node: 4, outcome: 'pending' },
      ]),
      { won: 1, held: 1, failed: 2 },
    );
  });

  test('a quorum is free once enough held nodes expired: the k-th shortest bound', () => {
    assert.equal(quorumFreeInMs([100, 300], 3), 100, '3 nodes, 2 held: one must free');
    assert.equal(quorumFreeInMs([100, 300, 200], 3), 200, '3 held: two must free');
    assert.equal(quorumFreeInMs([500, 100, 300], 5), 100, '5 nodes, 3 held: one must free');
    assert.equal(quorumFreeInMs([500, 100, 300, 50, 20], 5), 100, '5 held: three must free');
    assert.equal(quorumFreeInMs([-1, 100], 3), 100, 'a key without expiry is skipped when it need not free');
    assert.equal(quorumFreeInMs([-1, -1], 3), -1, 'nothing bounds it');
    assert.equal(quorumFreeInMs([100], 3), 0, 'a quorum is free already');
  });
});

describe('fanOut', () => {
  const later = <T>(ms: number, value: T) =>
    new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

  test('settles as soon as decided, leaving the rest pending', async () => {
    const replies = await fanOut(
      3,
      (n) => (n === 2 ? later(1_000, 'slow') : later(1, 'fast')),
      5_000,
      (known) => known.length >= 2,
    );
    assert.deepEqual(
      replies.map((r) => r.outcome),
      ['value', 'value', 'pending'],
    );
  });

  test('a node past the timeout is timed out; a throwing or rejecting send is an error', async () => {
    const boom = new Error('boom');
    const replies = await fanOut(
      3,
      (n) => {
        if (n === 0) throw boom;
        if (n === 1) return Promise.reject(boom);
        return later(1_000, 'late');
      },
      20,
    );
    assert.deepEqual(replies, [
      { node: 0, outcome: 'error', error: boom },
      { node: 1, outcome: 'error', error: boom },
      { node: 2, outcome: 'timed-out' },
    ]);
  });

  test('a late rejection after settling is not an unhandled rejection', async () => {
    const reasons: unknown[] = [];
    const listener = (reason: unknown) => reasons.push(reason);
    process.on('unhandledRejection', listener);
    try {
      await fanOut(
        2,
        (n) => (n === 0 ? later(50, 0).then(() => Promise.reject(new Error('late'))) : Promise.resolve(1)),
        5,
        () => true,
      );
      await later(80, 0);
      assert.deepEqual(reasons, []);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });
});
