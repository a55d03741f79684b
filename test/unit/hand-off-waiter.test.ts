/**
 * A queued waiter's hand-off validity maths (issue 7, item 5), with an injected clock.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Waiter } from '../../src/primitives/hand-off-waiter.js';

function waiterAt(now: { t: number }): Waiter {
  return new Waiter('tok', { now: () => now.t });
}

describe('Waiter.handOff (item 5)', () => {
  test('an estimate up to 1 ms after receipt is TIME rounding, not a clock step: clamped to receipt', () => {
    const now = { t: 0 };
    const waiter = waiterAt(now);
    // Queued by a request sent at local 0, served at server 10,000.9 (TIME says 10,000).
    waiter.anchor(0, 10_000);
    // Handed off at server 11,500.1 (TIME says 11,500... or 11,501 once the ms turned), heard at 1,500.5.
    now.t = 1_500.5;
    assert.equal(waiter.hear('tok:7:11501'), true);
    const handOff = waiter.handOff();
    assert.equal(handOff?.fencingToken, 7);
    // Before the fix this fell back to the anchor (0): 1.5 s of validity lost for no fault at all.
    assert.equal(handOff?.sentAt, 1_500.5);
  });

  test('an estimate before receipt is kept as is', () => {
    const now = { t: 0 };
    const waiter = waiterAt(now);
    waiter.anchor(100, 10_000);
    now.t = 1_600;
    waiter.hear('tok:3:11400');
    assert.equal(waiter.handOff()?.sentAt, 1_500);
  });

  test('an estimate well after receipt is a server clock step: floored at the queued request', () => {
    const now = { t: 0 };
    const waiter = waiterAt(now);
    waiter.anchor(100, 10_000);
    now.t = 200;
    waiter.hear('tok:3:15000');
    assert.equal(waiter.handOff()?.sentAt, 100);
  });

  test('a hand-off older than the latest queued reply is stale and forgotten', () => {
    const now = { t: 0 };
    const waiter = waiterAt(now);
    waiter.anchor(100, 10_000);
    now.t = 150;
    waiter.hear('tok:3:10020');
    waiter.anchor(200, 10_100);
    assert.equal(waiter.handOff(), undefined);
    assert.equal(waiter.hear('tok:4:10200'), true, 'a later hand-off can be heard');
  });
});

// Found by the fault suite ('shortened extensions under pauses', FairMutex: overlap and a decreasing
// token): an attempt sent while Redis was paused found the lock already handed to it and said
// "acquired", too late to be usable, so the waiting loop handed it on; the hand-off's own message,
// slower on the subscriber connection, then arrived and was taken as a fresh grant of the same
// token while the next holder held the lock.
describe('Waiter: a grant learned from a reply', () => {
  test('its hand-off message, arriving later, is not taken as another grant', () => {
    const now = { t: 0 };
    const waiter = waiterAt(now);
    waiter.anchor(100, 10_000); // queued
    // The next attempt's reply: the lock is already ours (handed off at server 10,300), fencing token 7.
    waiter.noteGrant(7);
    now.t = 420;
    assert.equal(waiter.hear('tok:7:10300'), false, 'that grant was already had');
    assert.equal(waiter.handOff(), undefined);
    // A later hand-off (a new grant after re-queueing) is heard as usual.
    waiter.anchor(430, 10_330);
    now.t = 500;
    assert.equal(waiter.hear('tok:9:10390'), true);
    assert.equal(waiter.handOff()?.fencingToken, 9);
  });

  test('a hand-off taken once is not taken again (a message delivered twice)', () => {
    const now = { t: 0 };
    const waiter = waiterAt(now);
    waiter.anchor(100, 10_000);
    now.t = 150;
    assert.equal(waiter.hear('tok:5:10040'), true);
    assert.equal(waiter.handOff()?.fencingToken, 5);
    assert.equal(waiter.hear('tok:5:10040'), false);
    assert.equal(waiter.handOff(), undefined);
  });
});

test('Waiter: a message heard before a reply reported the same grant is dropped', () => {
  const now = { t: 0 };
  const waiter = waiterAt(now);
  waiter.anchor(100, 10_000);
  now.t = 150;
  assert.equal(waiter.hear('tok:5:10040'), true);
  waiter.noteGrant(5);
  assert.equal(waiter.handOff(), undefined);
});

test('Waiter: a release\'s "free, try now" wake wakes its waiter only, and is no grant', () => {
  const now = { t: 0 };
  const waiter = waiterAt(now);
  waiter.anchor(100, 10_000, true);
  assert.equal(waiter.hear('tok:free'), true, 'its own wake: the loop asks again at once');
  assert.equal(waiter.handOff(), undefined, 'nothing was handed over');
  assert.equal(waiter.hear('other:free'), false);
  assert.equal(waiter.hear('tok2:free'), false);
  assert.equal(waiter.hear('tok:freeze'), false);
  // A hand-off after a wake is still heard.
  now.t = 150;
  assert.equal(waiter.hear('tok:5:10040'), true);
  assert.equal(waiter.handOff()?.fencingToken, 5);
});

test('Waiter: its arrival is the server time of the first reply that queued it, kept afterwards', () => {
  const waiter = waiterAt({ t: 0 });
  assert.equal(waiter.arrivalMs, 0);
  waiter.anchor(100, 9_000, false); // a reply that did not queue it (a single try)
  assert.equal(waiter.arrivalMs, 0);
  waiter.anchor(100, 10_000, true);
  waiter.anchor(300, 10_200, true);
  assert.equal(waiter.arrivalMs, 10_000);
});

// Found by the fault suite ('workers paused at random (SIGSTOP)', Semaphore/2: an overlap, and a lease
// valid past its permits): a worker stopped twice took an old hand-off with no validity left, and its
// give-back released the permits a later hand-off had given the same token meanwhile; the late reply
// of an attempt abandoned across the second stop then anchored that later hand-off's message, which
// was taken as a grant while the next waiter held every permit.
test('Waiter: after a hand-off is taken, only a request sent later anchors the next one', () => {
  const now = { t: 0 };
  const waiter = waiterAt(now);
  waiter.anchor(100, 10_000, true); // queued
  // Handed off at server 10,100 (token 5) while the process was stopped; heard at 1,000.
  now.t = 1_000;
  assert.equal(waiter.hear('tok:5:10100'), true);
  // Attempt C, sent at 1,001, queued the call again at server 11,000 (token 5 had expired), and the
  // process was stopped before its reply was read. At server 11,300 the permits were handed to this
  // call again (token 9). Resumed at 1,800: C is abandoned, and token 5 is taken, with no validity
  // left: the waiting loop gives it back, which releases token 9's permits.
  now.t = 1_800;
  assert.equal(waiter.handOff()?.fencingToken, 5);
  // Then C's late reply arrives, and token 9's message.
  waiter.anchor(1_001, 11_000, true);
  assert.equal(waiter.hear('tok:9:11300'), true);
  assert.equal(waiter.handOff(), undefined, 'the give-back took that grant away');
  // The next attempt, sent after the give-back, anchors: token 9's hand-off is older, so stale.
  waiter.anchor(1_810, 11_810, true);
  assert.equal(waiter.handOff(), undefined);
  now.t = 1_900;
  assert.equal(waiter.hear('tok:12:11900'), true, 'a later hand-off is heard');
  assert.equal(waiter.handOff()?.fencingToken, 12);
});
