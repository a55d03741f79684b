/**
 * What users coming from other lock libraries type, and what Locksmith calls it. An unknown option
 * is refused (see `checkOptionsObject`); these hints turn that refusal into the migration answer, so
 * `{ retryCount: 3 }` says "did you mean `retries`" instead of only listing the known names.
 */

/** Where a foreign option went: a Locksmith option, and/or what to do instead. */
export interface OptionHint {
  /** The Locksmith option that does the same job, when there is one. */
  readonly option?: string;
  /** What differs (units, meaning), or what replaces an option Locksmith does not have. */
  readonly note: string;
}

const WATCHDOG =
  'the watchdog extends the lease at about ttlMs/3 while held; `autoExtend: false` turns it off';
const RANDOM_TOKENS =
  'owner tokens are random per acquisition: read `lease.token`, and release a token held elsewhere with `mutex.releaseToken(token)`';

/** Foreign option name → hint. Names are matched exactly (they are the other libraries' spellings). */
export const foreignOptionHints: Readonly<Record<string, OptionHint>> = Object.freeze({
  // node-redlock v5 settings
  retryCount: { option: 'retries', note: "node-redlock's `retryCount: -1` is `retries: Infinity`" },
  retryDelay: { option: 'retryDelayMs', note: 'usually unneeded: a release wakes a waiter' },
  retryJitter: { option: 'retryJitterMs', note: 'adds 0..retryJitterMs ms to timed waits' },
  automaticExtensionThreshold: { option: 'autoExtend', note: WATCHDOG },
  duration: { option: 'ttlMs', note: 'the lease TTL in milliseconds' },
  // redis-semaphore options
  lockTimeout: { option: 'ttlMs', note: 'the lock lifetime in milliseconds (a lock timeout, not a wait)' },
  acquireTimeout: { option: 'timeoutMs', note: 'how long `acquire()` waits, in milliseconds' },
  acquireAttemptsLimit: { option: 'retries', note: 'attempts after the first: acquireAttemptsLimit − 1' },
  retryInterval: { option: 'retryDelayMs', note: 'usually unneeded: a release wakes a waiter' },
  refreshInterval: { option: 'autoExtend', note: WATCHDOG },
  onLockLost: {
    note: 'there is no callback: `lease.signal` aborts with a `LockLostError` when the lock is lost (`lease.signal.addEventListener("abort", …)`)',
  },
  identifier: { note: RANDOM_TOKENS },
  acquiredExternally: { note: RANDOM_TOKENS },
  externallyAcquiredIdentifier: { note: RANDOM_TOKENS },
  // Redisson
  leaseTime: { option: 'ttlMs', note: 'in milliseconds; add `autoExtend: false` for a fixed lease' },
  waitTime: { option: 'timeoutMs', note: 'how long `acquire()` waits, in milliseconds' },
  lockWatchdogTimeout: { option: 'ttlMs', note: WATCHDOG },
  // redis_exp_lock (when passed to Mutex rather than RedisExpLock)
  expiry: { option: 'ttlMs', note: 'milliseconds, where redis_exp_lock counts seconds' },
  interval: { option: 'retryDelayMs', note: 'milliseconds, where redis_exp_lock counts seconds' },
  // Generic spellings
  ttl: { option: 'ttlMs', note: 'the lease TTL in milliseconds' },
  timeout: {
    option: 'timeoutMs',
    note: '`timeoutMs` is how long `acquire()` waits; the lock lifetime is `ttlMs`',
  },
  maxRetries: { option: 'retries', note: 'attempts after the first' },
  retry: { option: 'retries', note: 'attempts after the first' },
});

/**
 * The hint for an unknown option `key`, given the options that are `known` where it was passed.
 * A hint naming an option that is not accepted there is not offered (`tryAcquire()` has no
 * `timeoutMs`): suggesting it would only trade one refusal for another.
 */
export function hintForUnknownOption(key: string, known: readonly string[]): string | undefined {
  const hint = Object.hasOwn(foreignOptionHints, key) ? foreignOptionHints[key] : undefined;
  if (hint && hint.option === undefined) return hint.note;
  if (hint?.option !== undefined && known.includes(hint.option)) {
    return `did you mean \`${hint.option}\`? (${hint.note})`;
  }
  const prefixed = known.find((k) => k.toLowerCase().startsWith(key.toLowerCase()));
  return prefixed ? `did you mean \`${prefixed}\`?` : undefined;
}
