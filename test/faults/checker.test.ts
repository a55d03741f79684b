/**
 * The checker on hand-written histories: it must flag what is unsafe and nothing that is expected
 * under faults (a holder paused past its TTL is the lease's business, and fencing's, not an overlap).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { READ_WRITE_PERMITS } from '../../tools/lock-kinds/read-write-lock.js';
import { check, type KeyFindings, type Liveness } from './toolkit/checker.js';
import type { HistoryEvent } from './toolkit/protocol.js';
import type { ResourceStats } from './toolkit/resource.js';

const noKeys: KeyFindings = { leftAtStop: [], renewedAfterEnd: [], withoutExpiry: [] };
const cleanResource = (): ResourceStats => ({
  reads: 0,
  writes: 0,
  fencedRejections: 0,
  staleAccepted: 0,
  lostUpdates: 0,
});

interface HoldSpec {
  w: number;
  /** Which of worker `w`'s loops (absent: a worker of one loop). */
  l?: number;
  fence: number;
  enter: number;
  exit: number;
  validUntil: number;
  lostAt?: number;
  owner?: string;
  lock?: string;
  /** Permits held (a Semaphore's). */
  permits?: number;
  /** Every name held with its token (a MultiMutex's; `lock` among them). */
  names?: Record<string, number>;
  /** When the acquire call started (default: 1 ms before `enter`). */
  invoke?: number;
}

let seq = 0;
function hold(spec: HoldSpec): HistoryEvent[] {
  seq += 1;
  const { fence, enter, exit, validUntil } = spec;
  const w = spec.l === undefined ? { w: spec.w } : { w: spec.w, l: spec.l };
  const lock = spec.lock ?? 'L';
  return [
    { ev: 'invoke', ...w, seq, lock, t: spec.invoke ?? enter - 1 },
    {
      ev: 'ok',
      ...w,
      seq,
      lock,
      t: enter,
      fence,
      owner: spec.owner ?? `owner-${seq}`,
      validUntil,
      signalAborted: false,
      ...(spec.permits === undefined ? {} : { permits: spec.permits }),
      ...(spec.names === undefined ? {} : { names: spec.names }),
    },
    { ev: 'enter', ...w, seq, t: enter },
    {
      ev: 'exit',
      ...w,
      seq,
      t: exit,
      validUntil,
      lostAt: spec.lostAt,
      lostReason: spec.lostAt === undefined ? undefined : 'expired',
      skippedWrite: false,
    },
    { ev: 'release', ...w, seq, t: exit + 0.1, result: 'released' },
  ];
}

describe('fault-suite checker', () => {
  test('back-to-back holders with growing tokens: no violation', () => {
    const report = check(
      [
        ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500 }),
        ...hold({ w: 1, fence: 2, enter: 10.5, exit: 20, validUntil: 510 }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(report.acquisitions, 2);
    assert.equal(report.totalViolations, 0);
  });

  test("a grant judged at the library's last check before its hand-out: expired by then is flagged; expired while its caller had not yet looked is not", () => {
    // The `ok` event of one hold with the given hand-out time, first look and signal.
    const late = (spec: {
      checkedAt?: number;
      handedAt?: number;
      t: number;
      validUntil: number;
      signalAborted: boolean;
    }) =>
      hold({ w: 0, fence: 1, enter: spec.t, exit: spec.t + 1, validUntil: spec.validUntil }).map((event) =>
        event.ev === 'ok'
          ? {
              ...event,
              signalAborted: spec.signalAborted,
              ...(spec.handedAt === undefined ? {} : { handedAt: spec.handedAt }),
              ...(spec.checkedAt === undefined ? {} : { checkedAt: spec.checkedAt }),
            }
          : event,
      );
    const flagged = (events: HistoryEvent[]) =>
      check(events, cleanResource(), noKeys).violations['expired-grant'] ?? 0;
    // Handed out 5 ms after its validity ended: the library's fault, signal or not.
    assert.equal(flagged(late({ handedAt: 105, t: 106, validUntil: 100, signalAborted: true })), 1);
    assert.equal(flagged(late({ handedAt: 105, t: 106, validUntil: 100, signalAborted: false })), 1);
    // Handed out with validity left; its caller (one of several in a busy process) looked 4 ms
    // later, when it had run out and its signal aborted: not the library's.
    assert.equal(flagged(late({ handedAt: 99, t: 103, validUntil: 100, signalAborted: true })), 0);
    // A signal aborted while validity remained: a loss at the hand-out, flagged.
    assert.equal(flagged(late({ handedAt: 99, t: 100, validUntil: 500, signalAborted: true })), 1);
    // No hand-out time known: judged at the first look, as before.
    assert.equal(flagged(late({ t: 103, validUntil: 100, signalAborted: false })), 1);
    // Checked with validity left, the event 5 ms later (the process descheduled in between): not
    // the library's; checked after its validity ended: the library's.
    assert.equal(
      flagged(late({ checkedAt: 99, handedAt: 104, t: 105, validUntil: 100, signalAborted: true })),
      0,
    );
    assert.equal(
      flagged(late({ checkedAt: 102, handedAt: 103, t: 104, validUntil: 100, signalAborted: false })),
      1,
    );
  });

  test('two holders valid at once: overlap', () => {
    const report = check(
      [
        ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500 }),
        ...hold({ w: 1, fence: 2, enter: 5, exit: 20, validUntil: 505 }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(report.violations.overlap, 1);
  });

  test('a holder paused past its validity overlapping the next: not an overlap (fencing territory)', () => {
    const report = check(
      [
        // Validity ended at 500; the process ran on (paused) until 1,200.
        ...hold({ w: 0, fence: 1, enter: 0, exit: 1_200, validUntil: 500 }),
        ...hold({ w: 1, fence: 2, enter: 510, exit: 520, validUntil: 1_010 }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(report.totalViolations, 0);
  });

  test('a holder that learned of its loss early is judged from then on', () => {
    const report = check(
      [
        ...hold({ w: 0, fence: 1, enter: 0, exit: 300, validUntil: 500, lostAt: 100 }),
        ...hold({ w: 1, fence: 2, enter: 200, exit: 220, validUntil: 700 }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(report.violations.overlap, 0);
  });

  test('at most K: two holders of a 2-permit semaphore at once are fine, a third is not', () => {
    const two = [
      ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500 }),
      ...hold({ w: 1, fence: 2, enter: 5, exit: 20, validUntil: 505 }),
    ];
    assert.equal(check(two, cleanResource(), noKeys, 2).totalViolations, 0);
    const three = [...two, ...hold({ w: 2, fence: 3, enter: 8, exit: 30, validUntil: 508 })];
    const report = check(three, cleanResource(), noKeys, 2);
    assert.equal(report.violations.overlap, 1);
    assert.match(report.examples[0] as string, /2 of 2 held by w0#\d+ \(token 1, 1\), w1#\d+ \(token 2, 1\)/);
    // Once the first has left, the third fits.
    const later = [...two, ...hold({ w: 2, fence: 3, enter: 12, exit: 30, validUntil: 512 })];
    assert.equal(check(later, cleanResource(), noKeys, 2).totalViolations, 0);
  });

  test('at most K counts permits: 2 + 1 permits at once break a limit of 2', () => {
    const events = [
      ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500, permits: 2 }),
      ...hold({ w: 1, fence: 2, enter: 5, exit: 20, validUntil: 505 }),
    ];
    assert.equal(check(events, cleanResource(), noKeys, 2).violations.overlap, 1);
    assert.equal(check(events, cleanResource(), noKeys, 3).violations.overlap, 0);
  });

  test('readers-writer (a writer holds every permit, a reader one): readers overlap, a writer overlaps nobody', () => {
    const all = READ_WRITE_PERMITS;
    const readers = [
      ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500 }),
      ...hold({ w: 1, fence: 2, enter: 2, exit: 12, validUntil: 502 }),
      ...hold({ w: 2, fence: 3, enter: 4, exit: 14, validUntil: 504 }),
    ];
    assert.equal(check(readers, cleanResource(), noKeys, all).totalViolations, 0);
    const writerAfter = [
      ...readers,
      ...hold({ w: 3, fence: 4, enter: 15, exit: 20, validUntil: 515, permits: all }),
    ];
    assert.equal(check(writerAfter, cleanResource(), noKeys, all).totalViolations, 0);
    const writerAmongReaders = [
      ...readers,
      ...hold({ w: 3, fence: 4, enter: 13, exit: 20, validUntil: 513, permits: all }),
    ];
    assert.equal(check(writerAmongReaders, cleanResource(), noKeys, all).violations.overlap, 1);
    const readerInWriter = [
      ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500, permits: all }),
      ...hold({ w: 1, fence: 2, enter: 9, exit: 12, validUntil: 509 }),
    ];
    assert.equal(check(readerInWriter, cleanResource(), noKeys, all).violations.overlap, 1);
    const twoWriters = [
      ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500, permits: all }),
      ...hold({ w: 1, fence: 2, enter: 9, exit: 12, validUntil: 509, permits: all }),
    ];
    assert.equal(check(twoWriters, cleanResource(), noKeys, all).violations.overlap, 1);
  });

  test('at most K: holders past their validity (paused) do not count', () => {
    const events = [
      ...hold({ w: 0, fence: 1, enter: 0, exit: 1_200, validUntil: 500 }),
      ...hold({ w: 1, fence: 2, enter: 0, exit: 1_200, validUntil: 500 }),
      ...hold({ w: 2, fence: 3, enter: 510, exit: 520, validUntil: 1_010, permits: 2 }),
    ];
    assert.equal(check(events, cleanResource(), noKeys, 2).totalViolations, 0);
  });

  test('semaphore tokens: concurrent holders may enter in any order; a later call needs a higher token', () => {
    // Granted 1 then 2 (both calls started at 0), entered in the other order: fine.
    const concurrent = [
      ...hold({ w: 0, fence: 2, enter: 5, exit: 20, validUntil: 500, invoke: 0 }),
      ...hold({ w: 1, fence: 1, enter: 6, exit: 20, validUntil: 500, invoke: 0 }),
    ];
    assert.equal(check(concurrent, cleanResource(), noKeys, 2).totalViolations, 0);
    // A call started after token 5 was granted cannot be given token 4.
    const backwards = [
      ...hold({ w: 0, fence: 5, enter: 5, exit: 6, validUntil: 500, invoke: 0 }),
      ...hold({ w: 1, fence: 4, enter: 20, exit: 21, validUntil: 500, invoke: 10 }),
    ];
    assert.equal(check(backwards, cleanResource(), noKeys, 2).violations['decreasing-token'], 1);
  });

  test("a Semaphore's local holder: its token above those granted before its run's grant, and its run's", () => {
    const run = 'permit-run';
    // w0's run was granted 10 (call started at 0) and reserved 11-12; w1 was granted 20 at 5; w0's
    // local holder's call started at 8, after that grant, with reserved 11: fine (several hold a
    // Semaphore at once, and its token was reserved before w1's grant).
    const passed = [
      ...hold({ w: 0, l: 0, fence: 10, enter: 1, exit: 6, validUntil: 500, owner: run, invoke: 0 }),
      ...hold({ w: 1, fence: 20, enter: 5, exit: 30, validUntil: 500, invoke: 4 }),
      ...hold({ w: 0, l: 1, fence: 11, enter: 9, exit: 10, validUntil: 500, owner: run, invoke: 8 }),
    ];
    assert.equal(check(passed, cleanResource(), noKeys, 2).totalViolations, 0);
    // Below a token granted before its run's first call started: flagged.
    const stale = [
      ...hold({ w: 1, fence: 20, enter: 0, exit: 1, validUntil: 500, invoke: 0 }),
      ...hold({ w: 0, l: 0, fence: 21, enter: 3, exit: 6, validUntil: 500, owner: run, invoke: 2 }),
      ...hold({ w: 0, l: 1, fence: 19, enter: 9, exit: 10, validUntil: 500, owner: run, invoke: 2.5 }),
    ];
    assert.ok((check(stale, cleanResource(), noKeys, 2).violations['decreasing-token'] ?? 0) >= 1);
    // Lower than its run's earlier holder: flagged.
    const backwards = [
      ...hold({ w: 0, l: 0, fence: 12, enter: 1, exit: 6, validUntil: 500, owner: run, invoke: 0 }),
      ...hold({ w: 0, l: 1, fence: 11, enter: 9, exit: 10, validUntil: 500, owner: run, invoke: 0 }),
    ];
    assert.match(check(backwards, cleanResource(), noKeys, 2).examples.join('\n'), /of the same run/);
  });

  test('duplicate and decreasing fencing tokens', () => {
    const report = check(
      [
        ...hold({ w: 0, fence: 5, enter: 0, exit: 1, validUntil: 500 }),
        ...hold({ w: 1, fence: 5, enter: 2, exit: 3, validUntil: 500 }),
        ...hold({ w: 2, fence: 4, enter: 4, exit: 5, validUntil: 500 }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(report.violations['duplicate-token'], 1);
    assert.equal(report.violations['decreasing-token'], 1);
  });

  test('tokens are per lock name', () => {
    const report = check(
      [
        ...hold({ w: 0, fence: 1, enter: 0, exit: 1, validUntil: 500, lock: 'A' }),
        ...hold({ w: 1, fence: 1, enter: 0.5, exit: 3, validUntil: 500, lock: 'B' }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(report.totalViolations, 0);
  });

  test('a MultiMutex hold is judged under every name it holds, each with its own token', () => {
    // Two holds of other first names that share a second name, valid at once: that name had two
    // holders (judged by their first names only, each looked alone).
    const overlapping = check(
      [
        ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500, lock: 'A', names: { A: 1, S: 1 } }),
        ...hold({ w: 1, fence: 1, enter: 5, exit: 20, validUntil: 505, lock: 'B', names: { B: 1, S: 2 } }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(overlapping.violations.overlap, 1, overlapping.examples.join('\n'));
    assert.match(overlapping.examples.join('\n'), /^overlap: S: /m);
    // One after the other: each name's tokens rise in entry order; the shared name's own tokens
    // are judged (a decrease there is flagged, whatever the first names' tokens do).
    const inTurn = check(
      [
        ...hold({ w: 0, fence: 7, enter: 0, exit: 10, validUntil: 500, lock: 'A', names: { A: 7, S: 3 } }),
        ...hold({ w: 1, fence: 1, enter: 11, exit: 20, validUntil: 505, lock: 'B', names: { B: 1, S: 4 } }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(inTurn.totalViolations, 0, inTurn.examples.join('\n'));
    const decreasing = check(
      [
        ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500, lock: 'A', names: { A: 1, S: 4 } }),
        ...hold({ w: 1, fence: 1, enter: 11, exit: 20, validUntil: 505, lock: 'B', names: { B: 1, S: 3 } }),
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(decreasing.violations['decreasing-token'], 1, decreasing.examples.join('\n'));
  });

  test('a lease believing in more time than the server gives it', () => {
    const probe = (holder: 'self' | 'other' | 'none', pttl: number, validUntil: number): HistoryEvent => ({
      ev: 'probe',
      w: 0,
      seq: 99,
      q0: 100,
      q1: 101,
      validUntil,
      holder,
      pttl,
    });
    const report = check(
      [
        probe('self', 300, 350), // fine: server keeps it until ≥ 401
        probe('self', 300, 450), // lease past the server's expiry
        probe('none', -2, 150), // key gone, lease still valid
        probe('self', -1, 150), // no TTL at all
      ],
      cleanResource(),
      noKeys,
    );
    assert.equal(report.violations['lease-outlived-expiry'], 2);
    assert.equal(report.violations['key-without-expiry'], 1);
  });

  test('a lease granted after its validity ended, signal live or aborted, is an expired grant', () => {
    const events: HistoryEvent[] = [
      {
        ev: 'ok',
        w: 0,
        seq: 1,
        lock: 'L',
        t: 600,
        fence: 1,
        owner: 'x',
        validUntil: 500,
        signalAborted: false,
      },
      {
        ev: 'ok',
        w: 0,
        seq: 2,
        lock: 'L',
        t: 600,
        fence: 2,
        owner: 'y',
        validUntil: 500,
        signalAborted: true,
      },
    ];
    // Both: acquire() must never resolve with a lease that has no validity left (Trust item 4), even
    // one honest enough to say so through its signal — `using()` would still run the work on it.
    assert.equal(check(events, cleanResource(), noKeys).violations['expired-grant'], 2);
  });

  // Found in CI ('workers paused at random', Mutex): the harness froze a worker between acquire()
  // resolving and the worker reading its clock; the grant had validity when the library checked it.
  test('a grant that expired while its own worker was frozen is the freeze, not the library', () => {
    const grant = (w: number, seq: number, signalAborted = false): HistoryEvent => ({
      ev: 'ok',
      w,
      seq,
      lock: 'L',
      t: 900,
      fence: seq,
      owner: `o${seq}`,
      validUntil: 640,
      signalAborted,
    });
    const frozen: HistoryEvent = { ev: 'frozen', w: 0, from: 500, t: 890 };
    const count = (events: HistoryEvent[]) =>
      check(events, cleanResource(), noKeys).violations['expired-grant'];
    assert.equal(count([grant(0, 1), frozen]), 0, 'frozen through the end of validity: excused');
    assert.equal(count([frozen, grant(0, 1)]), 0, 'whatever order the events arrive in');
    assert.equal(count([grant(1, 1), frozen]), 1, 'another worker’s freeze excuses nothing');
    assert.equal(
      count([grant(0, 1, true), frozen]),
      0,
      'aborted too: frozen before the lease was created, it was born past its validity',
    );
    assert.equal(count([grant(0, 1, true)]), 1, 'an aborted late grant without a freeze is flagged');
    assert.equal(
      count([grant(0, 1), { ev: 'frozen', w: 0, from: 100, t: 600 }]),
      1,
      'a freeze that ended before the validity did',
    );
  });

  test('an ungranted token holding a lock: flagged unless given back, and never after its give-back', () => {
    const samples = (owner: string, from: number, to: number) =>
      Array.from({ length: Math.floor((to - from) / 20) + 1 }, (_, i) => ({
        lock: 'L',
        owner,
        t: from + 20 * i,
      }));
    const keys: KeyFindings = {
      ...noKeys,
      orphanGraceMs: 250,
      ownerSamples: [
        ...samples('granted', 0, 400), // a holder's own token: never an orphan
        ...samples('short', 1_000, 1_200), // under the grace period
        ...samples('never-given-back', 2_000, 2_480), // held most of a TTL by nobody
        ...samples('given-back-late', 3_000, 3_600), // its client reconnected only then
        ...samples('held-past-give-back', 4_000, 4_100),
      ],
    };
    const events: HistoryEvent[] = [
      ...hold({ w: 0, fence: 1, enter: 0, exit: 400, validUntil: 500, owner: 'granted' }),
      { ev: 'give-back', w: 1, t: 3_610, token: 'given-back-late', released: true },
      { ev: 'give-back', w: 1, t: 4_050, token: 'held-past-give-back', released: true },
    ];
    const report = check(events, cleanResource(), keys);
    assert.equal(report.violations['orphaned-key'], 2);
    const details = report.examples.map(String).join('\n');
    assert.match(details, /never-/);
    assert.match(details, /held-pa/);
    assert.doesNotMatch(details, /given-b/);
  });

  describe("a worker's several loops (a Mutex's local holders share the owner token in Redis)", () => {
    const run = 'run-token';

    test('local holders taking turns on one owner token, tokens rising: no violation', () => {
      const report = check(
        [
          ...hold({ w: 0, l: 0, fence: 10, enter: 0, exit: 5, validUntil: 500, owner: run, invoke: 0 }),
          ...hold({ w: 0, l: 1, fence: 11, enter: 5.1, exit: 9, validUntil: 500, owner: run, invoke: 0 }),
          ...hold({ w: 0, l: 2, fence: 12, enter: 9.1, exit: 12, validUntil: 500, owner: run, invoke: 1 }),
          ...hold({ w: 1, l: 0, fence: 13, enter: 20, exit: 25, validUntil: 600 }),
          ...hold({ w: 0, l: 1, fence: 14, enter: 30, exit: 31, validUntil: 600, invoke: 10 }),
        ],
        cleanResource(),
        noKeys,
      );
      assert.equal(report.acquisitions, 5);
      assert.equal(report.totalViolations, 0, report.examples.join('\n'));
    });

    test('two loops of one process valid at once: an overlap, whatever owner token they share', () => {
      const report = check(
        [
          ...hold({ w: 0, l: 0, fence: 10, enter: 0, exit: 5, validUntil: 500, owner: run }),
          ...hold({ w: 0, l: 1, fence: 11, enter: 4, exit: 9, validUntil: 500, owner: run }),
        ],
        cleanResource(),
        noKeys,
      );
      assert.equal(report.violations.overlap, 1);
      assert.match(report.examples.join('\n'), /w0\.1#\d+ \(token 11\).*w0#\d+ \(token 10/);
    });

    test('one fencing token handed to two local holders of one owner token: a duplicate', () => {
      const report = check(
        [
          ...hold({ w: 0, l: 0, fence: 10, enter: 0, exit: 5, validUntil: 500, owner: run }),
          ...hold({ w: 0, l: 1, fence: 10, enter: 6, exit: 9, validUntil: 500, owner: run }),
        ],
        cleanResource(),
        noKeys,
      );
      assert.equal(report.violations['duplicate-token'], 1);
      assert.match(report.examples.join('\n'), /one owner token in Redis/);
    });

    test('within a process, a call started after a grant gets a higher token, even one that never entered', () => {
      // Loop 1's call started after loop 0 was granted 12; its token 11 is lower (a reserved token
      // handed out after a newer grant). It was never valid when it entered, so the entry-order
      // check cannot see it: the process's grant order does.
      const events: HistoryEvent[] = [
        ...hold({ w: 0, l: 0, fence: 12, enter: 0, exit: 5, validUntil: 500, invoke: 0 }),
        ...hold({ w: 0, l: 1, fence: 11, enter: 8, exit: 9, validUntil: 7, invoke: 2 }),
      ];
      const report = check(events, cleanResource(), noKeys);
      assert.equal(report.violations['decreasing-token'], 1);
      assert.match(report.examples.join('\n'), /token 11 \(w0\.1#\d+\).*token 12 \(w0#\d+\)/);
      // Two processes' calls, each started before the other's grant: no order to keep.
      const concurrent = [
        ...hold({ w: 0, fence: 12, enter: 10, exit: 11, validUntil: 12, invoke: 0 }),
        ...hold({ w: 1, fence: 11, enter: 20, exit: 21, validUntil: 19, invoke: 2 }),
      ];
      assert.equal(check(concurrent, cleanResource(), noKeys).totalViolations, 0);
    });

    test("the run's owner token in Redis is no orphan: some loop of the process was granted it", () => {
      const keys: KeyFindings = {
        ...noKeys,
        orphanGraceMs: 100,
        ownerSamples: Array.from({ length: 30 }, (_, i) => ({ lock: 'L', owner: run, t: 20 * i })),
      };
      const events: HistoryEvent[] = [
        ...hold({ w: 2, l: 4, fence: 1, enter: 0, exit: 300, validUntil: 500, owner: run }),
        ...hold({ w: 2, l: 5, fence: 2, enter: 300.1, exit: 580, validUntil: 600, owner: run }),
      ];
      const report = check(events, cleanResource(), keys);
      assert.equal(report.violations['orphaned-key'], 0);
      assert.equal(report.totalViolations, 0, report.examples.join('\n'));
    });
  });

  test('a key left by a release that failed (typed) near the end waits out its TTL; a released one is flagged', () => {
    const [invoke, ok, enter, exit] = hold({
      w: 0,
      fence: 1,
      enter: 0,
      exit: 10,
      validUntil: 500,
      lock: 'A',
    });
    const failedRelease: HistoryEvent = {
      ev: 'release',
      w: 0,
      seq,
      t: 10.1,
      result: 'error',
      error: 'QuorumError: the release reached 1 of 3 nodes',
    };
    const events = [
      invoke as HistoryEvent,
      ok as HistoryEvent,
      enter as HistoryEvent,
      exit as HistoryEvent,
      failedRelease,
      ...hold({ w: 1, fence: 2, enter: 0, exit: 10, validUntil: 500, lock: 'B' }),
    ];
    const report = check(events, cleanResource(), {
      leftAtStop: ['node 0: locksmith:{A}', 'node 1: locksmith:{B}'],
      renewedAfterEnd: [],
      withoutExpiry: [],
    });
    assert.equal(report.violations['key-left-behind'], 1, report.examples.join('\n'));
    assert.equal(report.keysLeftByFailedReleases, 1);
    assert.match(report.examples.join('\n'), /\{B\}/);
  });

  test('resource counts, leftover keys and crashes are violations', () => {
    const report = check(
      [{ ev: 'crash', w: 0, t: 1, error: 'unhandledRejection: boom' }],
      { ...cleanResource(), lostUpdates: 2, staleAccepted: 1, fencedRejections: 7 },
      { leftAtStop: ['k'], renewedAfterEnd: ['k'], withoutExpiry: [] },
    );
    assert.equal(report.violations['lost-update'], 2);
    assert.equal(report.violations['stale-token-accepted'], 1);
    assert.equal(report.violations['key-left-behind'], 1);
    assert.equal(report.violations['key-renewed-after-end'], 1);
    assert.equal(report.violations.crash, 1);
    // Refused stale accesses are fencing doing its job, not a violation.
    assert.equal(report.totalViolations, 6);
  });

  test('failed acquires by kind: a Redlock QuorumError is typed (no-quorum), an unknown error is listed', () => {
    const fail = (w: number, error: string): HistoryEvent[] => [
      { ev: 'invoke', w, seq: w, lock: 'L', t: 1 },
      { ev: 'fail', w, seq: w, lock: 'L', t: 2, error },
    ];
    const report = check(
      [
        ...fail(0, 'QuorumError[NO_QUORUM]: lock "L": acquire needs 2 of 3 nodes'),
        ...fail(1, 'LockTimeoutError[TIMEOUT]: gave up'),
        ...fail(2, 'Error[ECONNRESET]: read ECONNRESET'),
      ],
      cleanResource(),
      noKeys,
    );
    assert.deepEqual(report.failures, { 'no-quorum': 1, timeout: 1, error: 1 });
    assert.deepEqual(report.errors, ['Error[ECONNRESET]: read ECONNRESET']);
    assert.equal(report.totalViolations, 0);
  });

  test('failed releases by kind: typed (RedisUnavailableError) apart from untyped ones, which are listed', () => {
    const release = (w: number, error: string): HistoryEvent => ({
      ev: 'release',
      w,
      seq: w,
      t: 3,
      result: 'error',
      error,
    });
    const report = check(
      [
        release(0, 'RedisUnavailableError[REDIS_UNAVAILABLE]: Redis is unavailable for lock "L"'),
        release(1, 'ReplyError: MOVED 3999 127.0.0.1:6381'),
      ],
      cleanResource(),
      noKeys,
    );
    assert.deepEqual(report.releaseFailures, { 'redis-unavailable': 1, error: 1 });
    assert.deepEqual(report.releaseErrors, ['ReplyError: MOVED 3999 127.0.0.1:6381']);
  });

  test('fault windows: a violation inside one is reported in it and still counted; none is dropped', () => {
    const window = { name: 'primary killed', from: 100, to: 200, tolerate: ['overlap'] as const };
    const report = check(
      [
        // An overlap before the window, one inside it (its second holder enters at 150), and a
        // decreasing token inside it too.
        ...hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500 }),
        ...hold({ w: 1, fence: 2, enter: 5, exit: 20, validUntil: 505 }),
        ...hold({ w: 0, fence: 3, enter: 140, exit: 160, validUntil: 600 }),
        ...hold({ w: 1, fence: 4, enter: 150, exit: 170, validUntil: 610 }),
        ...hold({ w: 2, fence: 3.5, enter: 180, exit: 190, validUntil: 620 }),
      ],
      cleanResource(),
      noKeys,
      1,
      [window],
    );
    assert.equal(report.violations.overlap, 2, 'every overlap counts');
    assert.equal(report.violations['decreasing-token'], 1);
    assert.equal(report.windows.length, 1);
    assert.equal(report.windows[0]?.violations.overlap, 1, 'the one inside the window is attributed to it');
    assert.equal(report.windows[0]?.violations['decreasing-token'], 1);
    assert.deepEqual(report.windows[0]?.tolerate, ['overlap']);
    assert.ok(
      report.examples.some((e) => e.startsWith('overlap') && e.includes('[in window: primary killed]')),
    );
    assert.ok(report.examples.some((e) => e.startsWith('overlap') && !e.includes('[in window')));
  });

  test('liveness: a free lock while a caller waits longer than the bound is idle-while-queued (issue 34, item 2)', () => {
    const idle = (events: HistoryEvent[], liveness: Liveness = { idleBoundMs: 250 }) =>
      check(events, cleanResource(), noKeys, 1, [], liveness).violations['idle-while-queued'];
    const waitedFor = (w: number, invoke: number, enter: number, lock = 'L') =>
      hold({ w, fence: enter, invoke, enter, exit: enter + 10, validUntil: enter + 500, lock });
    const first = () => hold({ w: 0, fence: 1, enter: 0, exit: 10, validUntil: 500 });
    // A release handed the lock to a call that had given up: nobody used it for its TTL while w1 waited.
    assert.equal(idle([...first(), ...waitedFor(1, 5, 900)]), 1, 'free 890 ms while w1 waited');
    assert.equal(idle([...waitedFor(1, 5, 900), ...first()]), 1, 'whatever order the events arrive in');
    assert.equal(idle([...first(), ...waitedFor(1, 5, 900)], {}), 0, 'only when the scenario asks');
    // Negative cases.
    assert.equal(idle([...first(), ...waitedFor(1, 5, 200)]), 0, 'a gap within the bound is a hand-off');
    assert.equal(idle([...first(), ...waitedFor(1, 899, 900)]), 0, 'free, but nobody waited');
    const heldM = hold({ w: 3, fence: 1, enter: 0, exit: 895, validUntil: 1_000, lock: 'M' });
    assert.equal(
      idle([...first(), ...heldM, ...waitedFor(1, 5, 900, 'M')]),
      0,
      'w1 waited for another lock, held meanwhile',
    );
    const gaveUp: HistoryEvent[] = [
      { ev: 'invoke', w: 2, seq: 9_001, lock: 'L', t: 5 },
      { ev: 'fail', w: 2, seq: 9_001, lock: 'L', t: 60, error: 'LockTimeoutError: timed out' },
    ];
    assert.equal(
      idle([...first(), ...gaveUp, ...waitedFor(1, 899, 900)]),
      0,
      'a caller that gave up waits no more',
    );
    // A worker frozen while it waited for (or held) the lock may hold it in Redis meanwhile.
    const frozen = (w: number): HistoryEvent => ({ ev: 'frozen', w, from: 300, t: 700 });
    const waiting2: HistoryEvent[] = [
      { ev: 'invoke', w: 2, seq: 9_002, lock: 'L', t: 5 },
      { ev: 'fail', w: 2, seq: 9_002, lock: 'L', t: 950, error: 'abort storm' },
    ];
    assert.equal(
      idle([...first(), ...waiting2, ...waitedFor(1, 5, 900), frozen(2)]),
      0,
      'w2 frozen: excused',
    );
    assert.equal(
      idle([...first(), ...waitedFor(1, 5, 900), ...heldM, ...waitedFor(2, 5, 900, 'M'), frozen(2)]),
      1,
      'a freeze of a worker waiting for another lock excuses nothing',
    );
  });
});
