import { asArray, asInteger, asString } from './replies.js';

/** A lock's state as Redis sees it right now. */
export interface LockState {
  /** Whether anyone holds the lock. */
  readonly locked: boolean;
  /** The holder's owner token, when locked. */
  readonly ownerToken: string | undefined;
  /** Milliseconds until the holder's lease expires (undefined when free). */
  readonly remainingTtlMs: number | undefined;
  /**
   * The highest fencing token issued or reserved (0 if never acquired): a process passing a Mutex
   * among its own callers reserves its run's tokens at once, so this may be above the last one
   * handed out.
   */
  readonly lastFencingToken: number;
  /**
   * The holder's label (its `label` option: host name and PID by default), when locked and it has
   * one; for people and tools reading the lock (the `locksmith` command shows it).
   */
  readonly holderLabel: string | undefined;
}

/**
 * Decodes an inspect script's reply: {owner token or '', PTTL, last fencing token, label or '',
 * ...extra}. Returns the lock's state and the extra integers that follow it.
 */
export function decodeLockState(script: string, reply: unknown, extra = 0): [LockState, number[]] {
  const fields = asArray(script, reply, 4 + extra);
  const owner = asString(script, fields[0]);
  const label = asString(script, fields[3]);
  const state: LockState = {
    locked: owner !== '',
    ownerToken: owner === '' ? undefined : owner,
    remainingTtlMs: owner === '' ? undefined : asInteger(script, fields[1]),
    lastFencingToken: asInteger(script, fields[2]),
    holderLabel: owner === '' || label === '' ? undefined : label,
  };
  return [state, fields.slice(4).map((field) => asInteger(script, field))];
}
