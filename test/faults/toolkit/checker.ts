/**
 * The mutual-exclusion checker: turns the workers' histories, the resource's counts and the
 * parent's end-of-run key checks into violations. Pure: unit-tested in ../checker.test.ts.
 *
 * It checks "at most K": a lock of `limit` permits (1 for the mutexes, more for a Semaphore) is
 * violated when holders that are valid at once hold more than `limit` permits between them (each
 * holder counts its `permits`, 1 unless its grant says otherwise). With limit 1 that is "no two
 * holders at once", as below.
 *
 * ## What counts as two holders at once
 *
 * A holder "holds" from when it enters its critical section until the first of: its exit, the
 * moment it learned the lock was lost (its signal aborted), and its lease's validity deadline as it
 * stood at exit. That last one is the holder's own reckoning: `validity = ttl − elapsed − drift`,
 * counted from when the acquire (or the last successful extension) was *sent*. It moves only on a
 * successful compare-and-pexpire, which proves the key was ours without a gap up to that moment, and
 * to exactly what that extension bought (earlier, for an extension to a shorter TTL), so using the
 * final deadline is the strictest sound choice.
 *
 * Two such intervals of the same lock overlapping is a violation. A holder that keeps running past
 * its deadline (paused by SIGSTOP, a GC, a swapped-out VM) overlapping the next holder is *not*: the
 * lock promised nothing past the lease, and no lock can stop a paused process from resuming. That
 * case is what fencing tokens are for, and it is caught at the resource instead: a stale token
 * accepted, or a lost update, is a violation. So every unsafe interleaving is flagged by exactly
 * one of the two checks, and an expected one (the lease ran out, fencing refused the late write)
 * by neither.
 *
 * Timestamps are CLOCK_MONOTONIC, one clock for every process on the machine, so comparing them
 * across processes needs no tolerance; the server's TTLs are compared through PTTL (a duration),
 * never through wall-clock instants.
 *
 * ## Fault windows
 *
 * A scenario may declare windows (`FaultWindow`): stretches in which the deployment itself cannot
 * keep a guarantee Locksmith documents as conditional (a failover: writes its replica had not
 * received are gone). Every violation with an instant (an overlap's second entry, a probe, a grant)
 * is also attributed to the windows it falls in (`windows` in the report): nothing is dropped, the
 * counts and examples are the same, and a window's own `tolerate` list says which kinds inside it
 * the run may forgive. Violations without an instant (the resource's counts, the end-of-run key
 * checks) are never inside a window.
 *
 * ## Liveness: a lock idle while callers wait for it
 *
 * Asked for by a scenario (`Liveness.idleBoundMs`), the checker also flags a stretch longer than
 * that bound in which a lock was free by every worker's account (no hold between its grant and its
 * release's reply) while at least one acquire call of a worker was waiting for it: the lock was
 * handed to, or kept by, nobody who uses it (a release handing it to a call that had given up). A
 * freeze (SIGSTOP) of a worker that was waiting for or holding that lock at the time excuses a
 * stretch it overlaps: the lock may be that process's, held while it is frozen.
 */

import type { HistoryEvent } from './protocol.js';
import type { ResourceStats } from './resource.js';

/** What the parent found in Redis after the workers stopped. */
export interface KeyFindings {
  /** Lock keys still present shortly after every worker stopped and released. */
  readonly leftAtStop: readonly string[];
  /** Lock keys still present (renewed by someone) after twice the TTL with every worker idle. */
  readonly renewedAfterEnd: readonly string[];
  /** Keys without any expiry other than the fencing counters. */
  readonly withoutExpiry: readonly string[];
  /**
   * Who Redis said held each lock, sampled during the run (only when the scenario asks for it, each
   * stamped when sent). An owner token that no worker was ever granted is a key held by nobody: an
   * attempt whose caller gave up. It is a violation when nobody gave it back and it was seen for
   * longer than `orphanGraceMs`, or when a sample sent after its give-back's reply still saw it. A
   * token given back is not flagged for the time before: a give-back waits for the client to reach
   * Redis again (a reset connection, an ioredis reconnect that re-sends the lost acquire first).
   */
  readonly ownerSamples?: readonly OwnerSample[];
  readonly orphanGraceMs?: number;
}

/** A stretch of the run in which some guarantees depend on the deployment (see the file comment). */
export interface FaultWindow {
  /** What happened ('primary killed', 'CLUSTER FAILOVER'). */
  readonly name: string;
  /** When the fault began (mono ms). */
  readonly from: number;
  /** Until when an instant counts as inside (mono ms): the deployment settled again, plus a TTL. */
  readonly to: number;
  /** The kinds a violation inside this window may be of without failing the run. */
  readonly tolerate: readonly ViolationKind[];
}

/** What the checker found inside one window. */
export interface WindowReport {
  readonly name: string;
  readonly from: number;
  readonly to: number;
  readonly tolerate: readonly ViolationKind[];
  /** Violations whose instant fell inside, by kind (also counted in the report's `violations`). */
  readonly violations: Readonly<Record<ViolationKind, number>>;
}

export interface OwnerSample {
  readonly lock: string;
  readonly owner: string;
  readonly t: number;
}

export const violationKinds = [
  'overlap',
  'duplicate-token',
  'decreasing-token',
  'stale-token-accepted',
  'lost-update',
  'lease-outlived-expiry',
  'expired-grant',
  'key-left-behind',
  'key-renewed-after-end',
  'key-without-expiry',
  'orphaned-key',
  /** Liveness (see the file comment): a free lock with a live caller waiting longer than a bound. */
  'idle-while-queued',
  'crash',
] as const;
export type ViolationKind = (typeof violationKinds)[number];

export interface CheckReport {
  readonly acquisitions: number;
  readonly failures: Readonly<Record<string, number>>;
  /** The first few distinct messages of acquires that failed with an error (not a timeout or abort). */
  readonly errors: readonly string[];
  /** Releases that rejected, by kind (as `failures`: 'redis-unavailable', 'error', ...). */
  readonly releaseFailures: Readonly<Record<string, number>>;
  /** The first few distinct messages of releases that rejected with an untyped error. */
  readonly releaseErrors: readonly string[];
  /** The run's fault windows, with the violations that fell inside each. */
  readonly windows: readonly WindowReport[];
  readonly violations: Readonly<Record<ViolationKind, number>>;
  readonly totalViolations: number;
  /** Leases whose signal aborted while held (expected under faults; not a violation). */
  readonly lostLeases: number;
  readonly probes: number;
  /**
   * Holds that shared their owner token in Redis with an earlier hold of the same worker: a Mutex's
   * local holders, passed the process's lease without asking Redis (0 where nothing batches).
   */
  readonly localHolds: number;
  /** What workers counted (`count` events), by name. */
  readonly workerCounts: Readonly<Record<string, number>>;
  readonly resource: ResourceStats;
  /**
   * Lock keys found at stop that a release which failed with a typed error (no quorum, Redis
   * unreachable) may have left until their TTL, so not flagged as left behind (a key that outlives
   * its TTL is still flagged, as renewed after the end).
   */
  readonly keysLeftByFailedReleases: number;
  /** A few concrete violations, for the log. */
  readonly examples: readonly string[];
}

interface Hold {
  readonly w: number;
  /** Which of worker `w`'s loops (its concurrent callers) made it: 0 for a worker of one loop. */
  readonly l: number;
  readonly seq: number;
  readonly lock: string;
  readonly fence: number;
  readonly owner: string;
  readonly okAt: number;
  readonly grantedValidUntil: number;
  /** Permits held (1 for an exclusive lock). */
  readonly permits: number;
  /** Every name it holds with its token, when several (a MultiMutex's); else `lock` with `fence`. */
  readonly names: Readonly<Record<string, number>> | undefined;
  /** When the acquire call that made this hold started. */
  readonly invokedAt: number;
  enter?: number;
  exit?: Extract<HistoryEvent, { ev: 'exit' }>;
}

/**
 * A holder: worker `w`'s loop `l`. A worker's loops are concurrent callers of one process (a Mutex
 * passes its lease in Redis among them, and they share the owner token stored there), so a hold is
 * told apart by its holder and `seq`, never by its owner token.
 */
function holdKey(event: { readonly w: number; readonly l?: number; readonly seq: number }): string {
  return `${event.w}.${event.l ?? 0}:${event.seq}`;
}

/** A hold as the log names it: `w1#7`, or `w1.3#7` for loop 3 of a worker of several. */
function holdName(hold: { readonly w: number; readonly l?: number; readonly seq: number }): string {
  return `w${hold.w}${hold.l ? `.${hold.l}` : ''}#${hold.seq}`;
}

/** When the hold stopped being protected by its own reckoning (see the file comment). */
function protectedEnd(hold: Hold, endOfRun: number): number {
  if (!hold.exit) {
    // No exit logged (the worker was stopped mid-hold): only the granted validity is known.
    return Math.min(hold.grantedValidUntil, endOfRun);
  }
  return Math.min(hold.exit.t, hold.exit.lostAt ?? Number.POSITIVE_INFINITY, hold.exit.validUntil);
}

function classify(error: string): string {
  if (/LockTimeoutError/.test(error)) return 'timeout';
  if (/abort storm|scenario stopped|gave up after a give-back|AbortError/.test(error)) return 'aborted';
  if (/TooManyAttempts/.test(error)) return 'too-many-attempts';
  if (/NotAcquired/.test(error)) return 'not-acquired';
  if (/RedisUnavailable/.test(error)) return 'redis-unavailable';
  // Redlock: no quorum of nodes answered (a majority lost); typed, like a timeout.
  if (/QuorumError|NO_QUORUM/.test(error)) return 'no-quorum';
  return 'error';
}

const noViolations = () =>
  Object.fromEntries(violationKinds.map((k) => [k, 0])) as Record<ViolationKind, number>;

/** What liveness a scenario asks the checker to judge (see "Liveness" in the file comment). */
export interface Liveness {
  /** A lock free while a caller waits for it longer than this (ms) is flagged `idle-while-queued`. */
  readonly idleBoundMs?: number;
}

/** Flags a violation: `at` is its instant (mono ms), when it has one (see "Fault windows"). */
type Flag = (kind: ViolationKind, detail: string, count?: number, at?: number) => void;

export function check(
  events: readonly HistoryEvent[],
  resource: ResourceStats,
  keys: KeyFindings,
  limit = 1,
  faultWindows: readonly FaultWindow[] = [],
  liveness: Liveness = {},
): CheckReport {
  const violations = noViolations();
  const examples: string[] = [];
  const windows = faultWindows.map((w) => ({ ...w, violations: noViolations() }));
  const flag: Flag = (kind, detail, count = 1, at) => {
    violations[kind] += count;
    const inside = at === undefined ? [] : windows.filter((w) => w.from <= at && at <= w.to);
    for (const window of inside) window.violations[kind] += count;
    const where = inside.length ? ` [in window: ${inside.map((w) => w.name).join(', ')}]` : '';
    if (examples.length < 8) examples.push(`${kind}: ${detail}${where}`);
  };

  const holds = new Map<string, Hold>();
  const failures: Record<string, number> = {};
  const errors: string[] = [];
  const releaseFailures: Record<string, number> = {};
  const releaseErrors: string[] = [];
  /** Releases that failed with a typed error: their lock, when, and the lease's validity (≈ TTL). */
  const failedReleases: { lock: string; at: number; validityMs: number }[] = [];
  let lostLeases = 0;
  let probes = 0;
  const workerCounts: Record<string, number> = {};
  /** Token → when its first successful give-back's reply arrived. */
  const givenBack = new Map<string, number>();
  const lateGrants: Extract<HistoryEvent, { ev: 'ok' }>[] = [];
  const freezes: Extract<HistoryEvent, { ev: 'frozen' }>[] = [];
  const invoked = new Map<string, number>();
  /** Acquire calls: their lock, when they started and when they ended (granted or failed). */
  const calls = new Map<string, { w: number; lock: string; from: number; to?: number }>();
  /** When each hold's release answered (its lock was free again by its holder's account). */
  const releasedAt = new Map<string, number>();
  let endOfRun = 0;
  for (const event of events) {
    if ('t' in event) endOfRun = Math.max(endOfRun, event.t);
    switch (event.ev) {
      case 'invoke':
        invoked.set(holdKey(event), event.t);
        calls.set(holdKey(event), { w: event.w, lock: event.lock, from: event.t });
        break;
      case 'ok':
        endCall(calls, event);
        holds.set(holdKey(event), {
          w: event.w,
          l: event.l ?? 0,
          seq: event.seq,
          lock: event.lock,
          fence: event.fence,
          owner: event.owner,
          okAt: event.t,
          grantedValidUntil: event.validUntil,
          permits: event.permits ?? 1,
          names: event.names,
          invokedAt: invoked.get(holdKey(event)) ?? event.t,
        });
        // Judged once every event is in: a freeze of that worker may explain it (see below).
        if (isLateGrant(event)) lateGrants.push(event);
        break;
      case 'frozen':
        freezes.push(event);
        break;
      case 'fail': {
        endCall(calls, event);
        const category = classify(event.error);
        failures[category] = (failures[category] ?? 0) + 1;
        if (category === 'error' && errors.length < 5 && !errors.includes(event.error))
          errors.push(event.error);
        break;
      }
      case 'enter': {
        const hold = holds.get(holdKey(event));
        if (hold) hold.enter = event.t;
        break;
      }
      case 'exit': {
        const hold = holds.get(holdKey(event));
        if (hold) hold.exit = event;
        if (event.lostAt !== undefined) lostLeases += 1;
        break;
      }
      case 'probe': {
        probes += 1;
        // The server evaluated the probe at some instant e in [q0, q1]. Its expiry is then at most
        // q1 + pttl + 1 (PTTL is rounded down), or already past (≤ q1) when the key is not ours.
        const serverExpiryBound = event.holder === 'self' ? event.q1 + event.pttl + 1 : event.q1;
        if (event.holder === 'self' && event.pttl === -1) {
          flag('key-without-expiry', `${holdName(event)}: lock key has no TTL while held`, 1, event.q0);
        } else if (event.validUntil > serverExpiryBound) {
          flag(
            'lease-outlived-expiry',
            `${holdName(event)}: lease valid ${(event.validUntil - serverExpiryBound).toFixed(1)} ms past the server's expiry (holder=${event.holder}, pttl=${event.pttl})`,
            1,
            event.q0,
          );
        }
        break;
      }
      case 'give-back':
        if (event.released !== undefined && !givenBack.has(event.token)) givenBack.set(event.token, event.t);
        break;
      case 'count':
        workerCounts[event.name] = (workerCounts[event.name] ?? 0) + 1;
        break;
      case 'release':
        releasedAt.set(holdKey(event), event.t);
        if (event.result === 'error') {
          const error = event.error ?? 'unknown';
          const category = classify(error);
          releaseFailures[category] = (releaseFailures[category] ?? 0) + 1;
          if (category === 'error' && releaseErrors.length < 5 && !releaseErrors.includes(error))
            releaseErrors.push(error);
          const released = holds.get(holdKey(event));
          if (category !== 'error' && released) {
            const validityMs = released.grantedValidUntil - released.okAt;
            failedReleases.push({ lock: released.lock, at: event.t, validityMs });
          }
        }
        break;
      case 'crash':
        flag('crash', `w${event.w}: ${event.error}`, 1, event.t);
        break;
      default:
        break;
    }
  }

  // Each name's holders: a hold of several names (a MultiMutex's) is judged under every one of
  // them, with that name's fencing token (its `enter` and `exit` are the hold's).
  const byLock = new Map<string, Hold[]>();
  for (const hold of holds.values()) {
    for (const [name, fence] of Object.entries(hold.names ?? { [hold.lock]: hold.fence })) {
      const list = byLock.get(name) ?? [];
      list.push(name === hold.lock && fence === hold.fence ? hold : { ...hold, lock: name, fence });
      byLock.set(name, list);
    }
  }
  for (const [lock, list] of byLock) {
    // Fencing tokens: one holder per token, ever. Holders, not owner tokens: a Mutex's local
    // holders of one run share the owner token stored in Redis, and each must have its own token.
    const holders = new Map<number, Hold>();
    for (const hold of list) {
      const other = holders.get(hold.fence);
      if (other !== undefined) {
        flag(
          'duplicate-token',
          `${lock}: token ${hold.fence} handed to ${holdName(other)} and ${holdName(hold)}${other.owner === hold.owner ? ' (one owner token in Redis)' : ''}`,
          1,
          hold.okAt,
        );
      } else holders.set(hold.fence, hold);
    }

    // More than `limit` permits held by valid holders at once (among holders that were valid when
    // they entered: one whose grant arrived after its validity never held anything). With limit 1,
    // every valid holder another one enters beside is an overlap.
    const valid = list
      .filter((h) => h.enter !== undefined && protectedEnd(h, endOfRun) > (h.enter as number))
      .sort((a, b) => (a.enter as number) - (b.enter as number));
    let active: Hold[] = [];
    let highest = Number.NEGATIVE_INFINITY;
    for (const hold of valid) {
      const enter = hold.enter as number;
      active = active.filter((h) => protectedEnd(h, endOfRun) > enter);
      const held = active.reduce((sum, h) => sum + h.permits, 0);
      if (held + hold.permits > limit) {
        const others = active.map((o) => `${holdName(o)} (token ${o.fence}, ${o.permits})`).join(', ');
        const firstEnd = Math.min(...active.map((o) => protectedEnd(o, endOfRun)));
        flag(
          'overlap',
          `${lock}: ${holdName(hold)} (token ${hold.fence}) entered with ${hold.permits} permit(s) ${(firstEnd - enter).toFixed(1)} ms before ${held} of ${limit} held by ${others} stopped being valid`,
          1,
          enter,
        );
      }
      active.push(hold);
      // An exclusive lock's holders enter in token order.
      if (limit === 1 && hold.fence < highest) {
        flag('decreasing-token', `${lock}: token ${hold.fence} entered after token ${highest}`, 1, enter);
      }
      highest = Math.max(highest, hold.fence);
    }
    // Several holders at once may enter in any order; but a grant whose acquire call started after
    // another grant had resolved was made after it, so its token is higher. An exclusive lock's
    // valid holders are checked in entry order above; within one process, every grant is (a
    // Mutex's local holders get tokens reserved in Redis, and must still rise in grant order,
    // whether or not a holder ever entered, and across runs of the process). A Semaphore's local
    // holder is checked from its run's grant in Redis (see `runStarts`), and against its run.
    if (limit > 1) {
      checkTokensFollowGrants(lock, list, flag, runStarts(list));
      checkTokensRiseInRuns(lock, list, flag);
    } else {
      for (const w of new Set(list.map((h) => h.w)))
        checkTokensFollowGrants(
          lock,
          list.filter((h) => h.w === w),
          flag,
        );
    }
  }

  if (resource.lostUpdates > 0)
    flag('lost-update', `${resource.lostUpdates} writes based on a replaced version`, resource.lostUpdates);
  if (resource.staleAccepted > 0)
    flag(
      'stale-token-accepted',
      `${resource.staleAccepted} accesses with a superseded token accepted`,
      resource.staleAccepted,
    );
  // A release that failed (typed) leaves its key until the key's TTL, as documented: a key found at
  // stop is excused when such a release of its lock came within two TTLs of the run's end (the key
  // check runs 300 ms after it). Anyone keeping it alive longer is caught as renewed after the end.
  const mayStillExpire = (key: string) =>
    failedReleases.some((r) => key.endsWith(`{${r.lock}}`) && r.at + 2 * r.validityMs >= endOfRun);
  let keysLeftByFailedReleases = 0;
  for (const key of keys.leftAtStop) {
    if (mayStillExpire(key)) keysLeftByFailedReleases += 1;
    else flag('key-left-behind', `${key} still locked after every worker released`);
  }
  for (const key of keys.renewedAfterEnd)
    flag('key-renewed-after-end', `${key} still alive after 2×TTL of idle workers`);
  for (const key of keys.withoutExpiry) flag('key-without-expiry', `${key} has no TTL`);
  // A worker frozen (SIGSTOP) between the library's last validity check and its own clock reading
  // reads a grant that expired while it was frozen: that is the freeze, not the library. Excused
  // only when a freeze of that very worker began before the grant was read and ended after the
  // validity did. The signal may be aborted by then: frozen between the validity check and the
  // lease's creation, the process creates it after the freeze, already past its validity, and the
  // lease aborts at once (found in CI, 'workers paused at random', Mutex: 264 ms late, aborted).
  // A late grant with no such freeze is flagged, aborted or not.
  for (const grant of lateGrants) {
    const frozenThrough = freezes.some((f) => f.w === grant.w && f.t > grant.validUntil && f.from < grant.t);
    if (frozenThrough) continue;
    flag(
      'expired-grant',
      `${holdName(grant)} granted ${((grant.checkedAt ?? grant.handedAt ?? grant.t) - grant.validUntil).toFixed(1)} ms after its validity ended, signal ${grant.signalAborted ? 'aborted' : 'not aborted'}`,
      1,
      grant.t,
    );
  }
  checkOrphans(holds, givenBack, keys, flag);
  if (liveness.idleBoundMs !== undefined) {
    const busy = [...holds].map(([key, hold]) => ({
      w: hold.w,
      lock: hold.lock,
      from: hold.okAt,
      to: releasedAt.get(key) ?? hold.exit?.t ?? endOfRun,
    }));
    const waiting = [...calls.values()].map((call) => ({ ...call, to: call.to ?? endOfRun }));
    checkIdleWhileQueued(busy, waiting, freezes, liveness.idleBoundMs, flag);
  }

  const totalViolations = Object.values(violations).reduce((a, b) => a + b, 0);
  const runs = new Set<string>();
  let localHolds = 0;
  for (const hold of [...holds.values()].sort((a, b) => a.okAt - b.okAt)) {
    const run = `${hold.w} ${hold.lock} ${hold.owner}`;
    if (runs.has(run)) localHolds += 1;
    else runs.add(run);
  }
  return {
    acquisitions: holds.size,
    localHolds,
    failures,
    errors,
    releaseFailures,
    releaseErrors,
    windows,
    violations,
    totalViolations,
    lostLeases,
    probes,
    workerCounts,
    resource,
    keysLeftByFailedReleases,
    examples,
  };
}

/** Marks the acquire call an `ok` or a `fail` event ends. */
function endCall(
  calls: Map<string, { to?: number }>,
  event: { readonly w: number; readonly l?: number; readonly seq: number; readonly t: number },
): void {
  const call = calls.get(holdKey(event));
  if (call) call.to = event.t;
}

/** A worker's hold of a lock, or its call waiting for one, from `from` to `to` (mono ms). */
interface Span {
  readonly w: number;
  readonly lock: string;
  readonly from: number;
  readonly to: number;
}

/**
 * Flags each stretch longer than `boundMs` in which a lock had no holder (by the holders' own
 * events: from a grant to its release's reply) while some call waited for it, unless a freeze of a
 * worker that waited for or held that lock then overlaps it (see "Liveness" in the file comment).
 */
function checkIdleWhileQueued(
  busy: readonly Span[],
  waiting: readonly Span[],
  freezes: readonly Extract<HistoryEvent, { ev: 'frozen' }>[],
  boundMs: number,
  flag: Flag,
): void {
  for (const lock of new Set(waiting.map((call) => call.lock))) {
    const calls = waiting.filter((call) => call.lock === lock);
    // Each instant where the count of holders or of waiting calls changes; ends before starts at
    // one instant, so a hand-off (one release, one grant at once) is no gap.
    const edges: [t: number, holders: number, waiters: number][] = [];
    for (const hold of busy.filter((h) => h.lock === lock)) edges.push([hold.from, 1, 0], [hold.to, -1, 0]);
    for (const call of calls) edges.push([call.from, 0, 1], [call.to, 0, -1]);
    edges.sort((a, b) => a[0] - b[0] || a[1] + a[2] - (b[1] + b[2]));
    let holders = 0;
    let waiters = 0;
    let idleSince: number | undefined;
    for (const [t, dh, dw] of edges) {
      holders += dh;
      waiters += dw;
      const idle = holders === 0 && waiters > 0;
      if (idle && idleSince === undefined) idleSince = t;
      else if (!idle && idleSince !== undefined) {
        const from = idleSince;
        idleSince = undefined;
        if (t - from <= boundMs) continue;
        const involved = (span: Span, f: { w: number; from: number; t: number }) =>
          span.w === f.w && span.lock === lock && span.from < f.t && span.to > f.from;
        const excused = freezes.some(
          (f) =>
            f.from < t &&
            f.t > from &&
            (calls.some((c) => involved(c, f)) || busy.some((h) => involved(h, f))),
        );
        if (!excused) {
          flag(
            'idle-while-queued',
            `${lock}: free for ${(t - from).toFixed(0)} ms (bound ${boundMs} ms) while a caller waited for it`,
            1,
            from,
          );
        }
      }
    }
  }
}

/** A run: the holds one process made with one owner token in Redis (one Redis grant, then local ones). */
const runOf = (hold: Hold) => `${hold.w} ${hold.owner}`;

/**
 * When each hold's token was last known to be below none granted later: its acquire call's start,
 * or for a Semaphore's local holder (a later hold of a run) when its run's grant was answered. Its
 * token was reserved by an extension of the run's permit sent after that answer, above every token
 * granted before it, not above those other permits were granted since: several holders hold a
 * Semaphore at once, and a local pass is no round trip to learn them.
 */
function runStarts(holds: readonly Hold[]): Map<Hold, number> {
  const first = new Map<string, Hold>();
  for (const hold of [...holds].sort((a, b) => a.okAt - b.okAt)) {
    if (!first.has(runOf(hold))) first.set(runOf(hold), hold);
  }
  return new Map(
    holds.map((hold) => {
      const runFirst = first.get(runOf(hold)) as Hold;
      return [hold, runFirst === hold ? hold.invokedAt : runFirst.okAt];
    }),
  );
}

/** Flags a hold of a run whose token is not above the run's earlier holds' (in grant order). */
function checkTokensRiseInRuns(lock: string, holds: readonly Hold[], flag: Flag): void {
  const last = new Map<string, Hold>();
  for (const hold of [...holds].sort((a, b) => a.okAt - b.okAt)) {
    const before = last.get(runOf(hold));
    if (before && hold.fence <= before.fence) {
      flag(
        'decreasing-token',
        `${lock}: token ${hold.fence} (${holdName(hold)}) passed on after token ${before.fence} (${holdName(before)}) of the same run`,
        1,
        hold.okAt,
      );
    }
    last.set(runOf(hold), hold);
  }
}

/**
 * Flags a hold whose token is not above every token granted before its acquire call started (or
 * `since` says, for a hold whose token was reserved earlier).
 */
function checkTokensFollowGrants(
  lock: string,
  holds: readonly Hold[],
  flag: Flag,
  since?: ReadonlyMap<Hold, number>,
): void {
  const startOf = (hold: Hold) => since?.get(hold) ?? hold.invokedAt;
  const byGrant = [...holds].sort((a, b) => a.okAt - b.okAt);
  let next = 0;
  let highest: Hold | undefined;
  for (const hold of [...holds].sort((a, b) => startOf(a) - startOf(b))) {
    while (next < byGrant.length && (byGrant[next] as Hold).okAt < startOf(hold)) {
      const granted = byGrant[next] as Hold;
      if (!highest || granted.fence > highest.fence) highest = granted;
      next += 1;
    }
    if (highest && hold.fence <= highest.fence) {
      flag(
        'decreasing-token',
        `${lock}: token ${hold.fence} (${holdName(hold)}) granted to a call started after token ${highest.fence} (${holdName(highest)}) was granted`,
        1,
        hold.okAt,
      );
    }
  }
}

/**
 * Owner tokens Redis held although no worker was granted them: held past a give-back, or, never
 * given back, for longer than the grace period. A token granted to any hold is no orphan: a Mutex's
 * local holders of one run share one (the first was granted it by Redis, the others by the process).
 */
function checkOrphans(
  holds: ReadonlyMap<string, Hold>,
  givenBack: ReadonlyMap<string, number>,
  keys: KeyFindings,
  flag: Flag,
): void {
  if (!keys.ownerSamples) return;
  const granted = new Set([...holds.values()].map((hold) => hold.owner));
  const seen = new Map<string, { lock: string; first: number; last: number }>();
  for (const sample of keys.ownerSamples) {
    if (granted.has(sample.owner)) continue;
    const span = seen.get(sample.owner);
    if (span) span.last = Math.max(span.last, sample.t);
    else seen.set(sample.owner, { lock: sample.lock, first: sample.t, last: sample.t });
  }
  const grace = keys.orphanGraceMs ?? 0;
  for (const [owner, span] of seen) {
    const heldMs = (span.last - span.first).toFixed(0);
    const givenBackAt = givenBack.get(owner);
    if (givenBackAt === undefined && span.last - span.first > grace) {
      flag(
        'orphaned-key',
        `${span.lock}: token ${owner.slice(0, 8)}… held for ${heldMs} ms, never granted to anyone nor given back`,
        1,
        span.first,
      );
    } else if (givenBackAt !== undefined && span.last > givenBackAt) {
      flag(
        'orphaned-key',
        `${span.lock}: token ${owner.slice(0, 8)}… still held ${(span.last - givenBackAt).toFixed(0)} ms after it was given back`,
        1,
        span.last,
      );
    }
  }
}

/**
 * acquire() must not hand out a lease whose validity is already over, whatever its signal says:
 * `using()` would start work the lock no longer covers (a FairMutex did, with the signal aborted,
 * while Redis was paused past the TTL). Judged at the library's last validity check before the
 * hand-out (`checkedAt`; else its `acquired` event, right after that check; else the worker's
 * first look), with 1 ms of slack: with several callers in one busy process, a caller's first look
 * came milliseconds later, after a lease with little validity left had run out and aborted its
 * signal (seen in CI: 2.2 ms), and the process may be descheduled between the check and the event
 * (CI: 4.7 ms, 'lost replies: extend', FairMutex). A signal aborted while validity remained is a
 * loss, not an expiry: flagged.
 */
function isLateGrant(event: Extract<HistoryEvent, { ev: 'ok' }>): boolean {
  const handedAt = event.checkedAt ?? event.handedAt ?? event.t;
  const expiredByHandOut = event.validUntil < handedAt - 1;
  const lostUnexpired = event.signalAborted && event.validUntil >= event.t - 1;
  return expiredByHandOut || lostUnexpired;
}
