import { Lease, type LeaseBackend } from '../lease/lease.js';
import type { LockOptions } from '../options.js';

/** What an acquisition learned: whose token, which fencing token, and from when validity counts. */
export interface Granted {
  readonly token: string;
  readonly fencingToken: number;
  /** Monotonic instant no later than the moment the lease's TTL started on the server. */
  readonly sentAt: number;
  readonly attempts: number;
}

/** The lease every single-node primitive hands out, built from its effective options. */
export function grantLease(
  name: string,
  backend: LeaseBackend,
  granted: Granted,
  options: Readonly<LockOptions>,
): Lease {
  return new Lease(
    {
      name,
      token: granted.token,
      fencingToken: granted.fencingToken,
      ttlMs: options.ttlMs,
      sentAt: granted.sentAt,
      attempts: granted.attempts,
      autoExtend: options.autoExtend,
      driftFactor: options.driftFactor,
    },
    backend,
    options.clock,
  );
}
