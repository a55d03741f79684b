/**
 * Every error Locksmith throws on purpose is a `LockError` with a literal `code`, so callers can
 * branch on `err.code` without `instanceof` across module copies. Bad arguments are the exception:
 * they are plain `TypeError` / `RangeError`, as in the platform itself.
 */
export type LockErrorCode =
  | 'LOCK_TIMEOUT'
  | 'TOO_MANY_ATTEMPTS'
  | 'ALREADY_ACQUIRED'
  | 'LOCK_LOST'
  | 'NOT_HELD'
  | 'QUORUM'
  | 'UNSUPPORTED_CLIENT';

export class LockError extends Error {
  override readonly name: string = 'LockError';
  readonly code: LockErrorCode;

  constructor(code: LockErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** The wait for a lock ran out of time (`timeoutMs`). */
export class LockTimeoutError extends LockError {
  override readonly name = 'LockTimeoutError';
  constructor(
    readonly lockName: string,
    readonly timeoutMs: number,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(
      'LOCK_TIMEOUT',
      `Timed out after ${timeoutMs} ms waiting for lock "${lockName}" (${attempts} attempts)`,
      options,
    );
  }
}

/** Every allowed attempt failed because someone else held the lock (`retries` ran out). */
export class TooManyAttemptsError extends LockError {
  override readonly name = 'TooManyAttemptsError';
  constructor(
    readonly lockName: string,
    readonly attempts: number,
  ) {
    super(
      'TOO_MANY_ATTEMPTS',
      `Gave up on lock "${lockName}" after ${attempts} attempts: it is held by another owner`,
    );
  }
}

/** A lock object that is already locked was asked to lock again (redis_exp_lock semantics). */
export class AlreadyAcquiredError extends LockError {
  override readonly name = 'AlreadyAcquiredError';
  constructor(readonly lockName: string) {
    super('ALREADY_ACQUIRED', `Lock "${lockName}" is already acquired by this lock object; unlock it first`);
  }
}

/** Why a lease stopped being held without being released. */
export type LockLostReason =
  /** Redis no longer holds our token: it expired and may have been taken by someone else. */
  | 'not-owner'
  /** The validity (ttl − elapsed − drift) ran out before an extension succeeded. */
  | 'expired';

/** The lease's lock is gone: the reason of the lease's `AbortSignal`, and what `extend()` throws. */
export class LockLostError extends LockError {
  override readonly name = 'LockLostError';
  constructor(
    readonly lockName: string,
    readonly reason: LockLostReason,
    options?: { cause?: unknown },
  ) {
    super(
      'LOCK_LOST',
      reason === 'expired'
        ? `Lock "${lockName}" was lost: its validity ran out before it could be extended`
        : `Lock "${lockName}" was lost: Redis no longer holds this lease's token`,
      options,
    );
  }
}

/** An operation that needs a held lock was called on one that was released or never acquired. */
export class NotHeldError extends LockError {
  override readonly name = 'NotHeldError';
  constructor(
    readonly lockName: string,
    detail: string,
  ) {
    super('NOT_HELD', `Lock "${lockName}" is not held: ${detail}`);
  }
}

/** The object passed as a Redis client is neither ioredis nor node-redis. */
export class UnsupportedClientError extends LockError {
  override readonly name = 'UnsupportedClientError';
  constructor(detail: string) {
    super('UNSUPPORTED_CLIENT', `Expected an ioredis or node-redis (v4+) client, got ${detail}`);
  }
}
