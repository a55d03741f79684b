/**
 * The RedlockSemaphore's pure parts: its options (the quorum's defaults, `limit` required,
 * `permits` at most `limit`) and the quorum's view of its holders (a holder counts on a quorum of
 * servers only, for the quorum-th longest of its holds).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { SemaphoreHolder, SemaphoreState } from '../../src/protocol/semaphore.js';
import { permitsSeen, quorumHolders } from '../../src/redlock/quorum-holders.js';
import { defaultRedlockOptions } from '../../src/redlock/redlock-options.js';
import {
  defaultRedlockSemaphoreOptions,
  resolveRedlockSemaphoreOptions,
} from '../../src/redlock/redlock-semaphore-options.js';

function holder(token: string, remainingTtlMs: number, fencingToken = 1): SemaphoreHolder {
  return { token, permits: 1, fencingToken, remainingTtlMs, label: undefined };
}

function node(holders: SemaphoreHolder[], lastFencingToken = 1): SemaphoreState {
  const first = holders[0];
  return {
    locked: first !== undefined,
    ownerToken: first?.token,
    remainingTtlMs: first?.remainingTtlMs,
    lastFencingToken,
    holderLabel: undefined,
    limit: 2,
    permitsHeld: holders.length,
    holders,
    queueLength: 0,
  };
}

describe('RedlockSemaphore options', () => {
  test("the quorum's defaults, a required limit and permits within it", () => {
    assert.ok(Object.isFrozen(defaultRedlockSemaphoreOptions));
    assert.equal(defaultRedlockSemaphoreOptions.nodeTimeoutMs, defaultRedlockOptions.nodeTimeoutMs);
    assert.equal(defaultRedlockSemaphoreOptions.waiterTtlMs, defaultRedlockOptions.waiterTtlMs);
    assert.equal(defaultRedlockSemaphoreOptions.retryDelayMs, defaultRedlockOptions.retryDelayMs);
    assert.equal(defaultRedlockSemaphoreOptions.permits, 1);
    assert.equal(resolveRedlockSemaphoreOptions({ limit: 3 }).limit, 3);
    assert.throws(() => resolveRedlockSemaphoreOptions({}), TypeError);
    assert.throws(() => resolveRedlockSemaphoreOptions({ limit: 2, permits: 3 }), RangeError);
    assert.throws(() => resolveRedlockSemaphoreOptions({ limit: 2, minReplicaAcks: 1 }), RangeError);
    assert.throws(() => resolveRedlockSemaphoreOptions({ limit: 2, handOffAfterMs: 1 }), TypeError);
  });
});

describe("RedlockSemaphore's quorum view", () => {
  test('a holder on a minority does not count; one on a quorum counts for its quorum-th longest hold', () => {
    const state = quorumHolders(
      [
        node([holder('a', 900, 5), holder('b', 100)], 7),
        node([holder('a', 500, 6)], 6),
        node([holder('c', 800)], 9),
      ],
      2,
    );
    assert.deepEqual(
      state.holders.map((h) => [h.token, h.remainingTtlMs, h.fencingToken]),
      [['a', 500, 6]],
    );
    assert.equal(state.permitsHeld, 1);
    assert.equal(state.ownerToken, 'a');
    assert.equal(state.lastFencingToken, 9);
    assert.equal(state.locked, true);
  });

  test('a node that did not answer counts for nobody', () => {
    const state = quorumHolders([node([holder('a', 900)]), undefined, node([])], 2);
    assert.equal(state.locked, false);
    assert.deepEqual(state.holders, []);
    assert.equal(state.nodes[1], undefined);
  });
});

describe("RedlockSemaphore's check after a grant", () => {
  test('three holders of a quorum each, two per server: all three are seen', () => {
    const [a, b, c] = [holder('a', 900), holder('b', 900), holder('c', 900)];
    const states = [node([a, c]), node([a, b]), node([b, c])];
    assert.equal(permitsSeen(states, 2), 3);
  });

  test('with every server answering, a holder on one server only (being granted, or given back) is not counted', () => {
    const states = [node([holder('a', 900), holder('x', 900)]), node([holder('a', 900)]), node([])];
    assert.equal(permitsSeen(states, 2), 1);
  });

  test('with a server silent, a holder seen once may hold a quorum: counted; fewer than a quorum: unknown', () => {
    const states = [node([holder('a', 900), holder('x', 900)]), node([holder('a', 900)]), undefined];
    assert.equal(permitsSeen(states, 2), 2);
    assert.equal(permitsSeen([node([holder('a', 900)]), undefined, undefined], 2), undefined);
  });
});
