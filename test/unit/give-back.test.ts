/**
 * The give-back's retries (src/give-back.ts), with an injected clock: they stop once a retry would
 * go out after the token may hold the lock, also when the back-off's timer fires late.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sendGiveBack } from '../../src/give-back.js';

describe('sendGiveBack', () => {
  test('answered at once: one send, its reply', async () => {
    let sends = 0;
    const clock = { now: () => 0 };
    const reply = await sendGiveBack(
      async () => {
        sends += 1;
        return true;
      },
      clock,
      { firstMs: 1, maxMs: 1 },
      () => true,
    );
    assert.equal(reply, true);
    assert.equal(sends, 1);
  });

  test('a retry is not sent when its timer fired after the time it was worth trying by', async () => {
    // The clock reads 0 when the back-off is planned (a retry due at 1 ms, worth it), and 100 when
    // the timer fires: a busy process woke late, past the 50 ms the token may hold the lock for.
    const readings = [0, 100];
    const clock = { now: () => readings.shift() ?? 100 };
    const sentAt: number[] = [];
    let nowForSend = 0;
    await assert.rejects(
      sendGiveBack(
        async () => {
          sentAt.push(nowForSend);
          nowForSend = 100;
          throw new Error('ECONNRESET');
        },
        clock,
        { firstMs: 1, maxMs: 1 },
        (tryAt) => tryAt <= 50,
      ),
      /ECONNRESET/,
    );
    assert.deepEqual(sentAt, [0], 'only the first try went out');
  });

  test('retries while worth it, until answered', async () => {
    let failures = 2;
    let sends = 0;
    const reply = await sendGiveBack(
      async () => {
        sends += 1;
        if (failures-- > 0) throw new Error('ECONNRESET');
        return false;
      },
      { now: () => 0 },
      { firstMs: 1, maxMs: 1 },
      () => true,
    );
    assert.equal(reply, false);
    assert.equal(sends, 3);
  });
});
