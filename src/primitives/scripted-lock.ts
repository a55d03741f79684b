import type { RedisClient } from '../adapters/client-types.js';
import { driverFor } from '../adapters/detect.js';
import type { RedisDriver } from '../adapters/driver.js';
import { runScript } from '../adapters/run-script.js';
import type { Lease, LeaseBackend } from '../lease/lease.js';
import type { LockOptions } from '../options.js';
import { asArray, asInteger, asString } from '../protocol/replies.js';
import { scripts } from '../protocol/scripts.js';
import { type Granted, grantLease } from './grant-lease.js';

/** A lock's state as Redis sees it right now. */
export interface LockState {
  /** Whether anyone holds the lock. */
  readonly locked: boolean;
  /** The holder's owner token, when locked. */
  readonly ownerToken: string | undefined;
  /** Milliseconds until the holder's lease expires (undefined when free). */
  readonly remainingTtlMs: number | undefined;
  /** The fencing token of the latest acquisition (0 if never acquired). */
  readonly lastFencingToken: number;
}

/**
 * What every single-node lock shares: its client's driver, running its scripts, and turning a
 * grant into a lease. The lock kinds differ only in their scripts and how they wait.
 */
export abstract class ScriptedLock {
  // `@internal` members are left out of the published declarations (tsup.config.ts: stripInternal):
  // they name adapter and lease internals that users never need and must not come to rely on.
  /** @internal */
  protected readonly driver: RedisDriver;
  /** @internal */
  protected abstract readonly backend: LeaseBackend;

  constructor(
    client: RedisClient,
    readonly name: string,
  ) {
    this.driver = driverFor(client);
  }

  /** @internal */
  protected run(script: keyof typeof scripts, keys: string[], args: string[]): Promise<unknown> {
    return runScript(this.driver, scripts[script], keys, args);
  }

  /** @internal */
  protected lease(granted: Granted, options: Readonly<LockOptions>): Lease {
    return grantLease(this.name, this.backend, granted, options);
  }
}

/**
 * Decodes an inspect script's reply: {owner token or '', PTTL, last fencing token, ...extra}.
 * Returns the lock's state and the extra integers that follow it.
 */
export function decodeLockState(script: string, reply: unknown, extra = 0): [LockState, number[]] {
  const fields = asArray(script, reply, 3 + extra);
  const owner = asString(script, fields[0]);
  const state: LockState = {
    locked: owner !== '',
    ownerToken: owner === '' ? undefined : owner,
    remainingTtlMs: owner === '' ? undefined : asInteger(script, fields[1]),
    lastFencingToken: asInteger(script, fields[2]),
  };
  return [state, fields.slice(3).map((field) => asInteger(script, field))];
}
