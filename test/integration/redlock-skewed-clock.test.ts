/**
 * A RedlockMutex's hand-off-after window with a busy process whose wall clock is behind (issue 34,
 * item 3), on 3 real redis-servers, for every client kind.
 *
 * Whether the first waiter is due (has waited `handOffAfterMs`) is measured against the clock the
 * caller sends, so that every server of the quorum decides the same. That clock is clamped by each
 * server to `PLACE_TOLERANCE_MS` of its own, as a place is: a busy process whose clock is far behind
 * saw no waiter as due, so each of its releases freed the lock and its own next caller took it again,
 * and a waiter of another process timed out while the lock changed hands in that process.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Clock } from '../../src/clock.js';
import { RedlockMutex } from '../../src/index.js';
import { PLACE_TOLERANCE_MS } from '../../src/protocol/redlock.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { keepBusy } from '../fixtures/busy-lock.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { nameMaker, until, watchUnhandledRejections } from '../fixtures/helpers.js';

const NODES = 3;
const HAND_OFF_AFTER_MS = 200;
/** 10 minutes behind: far outside the tolerance, as the issue measured. */
const SKEW_MS = -600_000;

/** A clock whose wall reading is `skewMs` off; its monotonic one is right. */
function skewedClock(skewMs: number): Clock {
  return { now: () => performance.now(), wallNow: () => Date.now() + skewMs };
}

describe('RedlockMutex: a busy process with a skewed clock', () => {
  const servers: RedisServer[] = [];
  let unhandled: ReturnType<typeof watchUnhandledRejections>;

  before(async () => {
    for (let i = 0; i < NODES; i += 1) servers.push(await startRedis());
    unhandled = watchUnhandledRejections();
  });
  after(async () => {
    unhandled.stop();
    await Promise.all(servers.map((s) => s.stop()));
    assert.deepEqual(unhandled.reasons, [], 'no unhandled rejections');
  });

  for (const kind of clientKinds) {
    const freshName = nameMaker(`redlock-skew-${kind.name}`);
    test(`${kind.name}: a waiter of another process is served while a busy process whose clock is 10 minutes behind keeps taking the lock`, async (t) => {
      const clientSets = await Promise.all(
        [0, 1].map(() => Promise.all(servers.map((server) => kind.create(server.url)))),
      );
      const [busyClients, waiterClients] = clientSets as [TestClient[], TestClient[]];
      const name = freshName();
      const options = { ttlMs: 10_000, handOffAfterMs: HAND_OFF_AFTER_MS };
      try {
        const busyLock = new RedlockMutex(
          busyClients.map((c) => c.client),
          name,
          { ...options, clock: skewedClock(SKEW_MS) },
        );
        // Two loops in one process: each release is followed at once by the other loop's acquire.
        const busy = await keepBusy([busyLock, busyLock]);
        try {
          const waiter = new RedlockMutex(
            waiterClients.map((c) => c.client),
            name,
            options,
          );
          const started = performance.now();
          // Before the fix it was never due for the busy process: LockTimeoutError at this bound,
          // far above what the fix allows (the window, the tolerance and one hold).
          const lease = await waiter.acquire({ timeoutMs: 10_000 });
          t.diagnostic(
            `served in ${Math.round(performance.now() - started)} ms ` +
              `(window ${HAND_OFF_AFTER_MS} ms, tolerance ${PLACE_TOLERANCE_MS} ms)`,
          );
          const before = busy.acquisitions();
          assert.equal(await lease.release(), true);
          await until(async () => busy.acquisitions() > before, 'the busy process goes on after it');
        } finally {
          await busy.stop();
        }
      } finally {
        await Promise.all(clientSets.flat().map((c) => c.close()));
      }
    });
  }
});
