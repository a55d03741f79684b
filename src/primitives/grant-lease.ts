import { elapsedSince } from '../clock.js';
import { Lease, type LeaseBackend } from '../lease/lease.js';
import type { LockOptions } from '../options.js';
import { driftMs } from '../timing.js';

/** What an acquisition learned: whose token, which fencing token, and from when validity counts. */
export interface Granted {
  readonly token: string;
  readonly fencingToken: number;
  /** Monotonic instant no later than the moment the lease's TTL started on the server. */
  readonly sentAt: number;
  /**
   * Wall-clock time (`clock.wallNow()`) read with `sentAt`, when known: then a host suspend while
   * the request was in flight shortens the lease too (see `Clock`).
   */
  readonly sentAtWall?: number | undefined;
  readonly attempts: number;
}

/** The lease every single-node primitive hands out, built from its effective options. */
export function grantLease(
  name: string,
  backend: LeaseBackend,
  granted: Granted,
  options: Readonly<LockOptions>,
): Lease {
  return Lease.fromGrant(
    {
      name,
      token: granted.token,
      fencingToken: granted.fencingToken,
      ttlMs: options.ttlMs,
      sentAt: granted.sentAt,
      sentAtWall: granted.sentAtWall,
      attempts: granted.attempts,
      autoExtend: options.autoExtend,
      driftFactor: options.driftFactor,
      replyTimeoutMs: options.replyTimeoutMs,
    },
    backend,
    options.clock,
  );
}

/**
 * Milliseconds of validity a grant still has (≤ 0: none), counted as its lease will count it: the
 * TTL less the drift margin, less the time since it was sent on whichever clock moved further. Lock
 * kinds check it before handing a grant out, so no caller ever receives a lease born lost.
 */
export function grantValidityLeftMs(
  granted: Pick<Granted, 'sentAt' | 'sentAtWall'>,
  options: Readonly<Pick<LockOptions, 'ttlMs' | 'driftFactor' | 'clock'>>,
): number {
  const budgetMs = options.ttlMs - driftMs(options.ttlMs, options.driftFactor);
  return budgetMs - elapsedSince(options.clock, { mono: granted.sentAt, wall: granted.sentAtWall });
}
