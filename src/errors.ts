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
  | 'PERMITS_OVER_LIMIT'
  | 'NO_QUORUM'
  | 'WOULD_DEADLOCK'
  | 'UNSUPPORTED_CLIENT'
  | 'UNSUPPORTED_SERVER'
  | 'CLIENT_CLOSED'
  | 'REDIS_UNAVAILABLE'
  | 'NOT_REPLICATED'
  | 'REDIS_ERROR'
  | 'UNEXPECTED_REPLY'
  | 'CROSS_SLOT';

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
    options?: { cause?: unknown; behindLocalHolder?: boolean },
  ) {
    // A caller queued in its process's local batch waited behind a holder of its own process and
    // never asked Redis: "(0 attempts)" would read as if it had not waited at all.
    const where = options?.behindLocalHolder
      ? ' behind a holder in this process (queued in its local batch, so no attempt reached Redis)'
      : ` (${attempts} ${attempts === 1 ? 'attempt' : 'attempts'})`;
    super(
      'LOCK_TIMEOUT',
      `Timed out after ${timeoutMs} ms waiting for lock "${lockName}"${where}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
  }
}

/** Every allowed attempt failed because someone else held the lock (`retries` ran out). */
export class TooManyAttemptsError extends LockError {
  override readonly name = 'TooManyAttemptsError';
  constructor(
    readonly lockName: string,
    readonly attempts: number,
    /**
     * Whether the last attempt took the lock but its reply came too late to use (no validity left:
     * given back), rather than finding it held.
     */
    options?: { cause?: unknown; lastGrantTooLate?: boolean },
  ) {
    super(
      'TOO_MANY_ATTEMPTS',
      `Gave up on lock "${lockName}" after ${attempts} attempts: ${
        options?.lastGrantTooLate
          ? 'the last one was granted too late to use (its reply took longer than the lease is valid)'
          : 'it is held by another owner'
      }`,
      options?.cause === undefined ? undefined : { cause: options.cause },
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

/**
 * A Semaphore acquisition asked for more permits than the limit in force (lowered by `setLimit()`
 * below what the call asks): it could never be granted, so it stopped waiting and left the queue.
 */
export class PermitsOverLimitError extends LockError {
  override readonly name = 'PermitsOverLimitError';
  constructor(
    readonly lockName: string,
    readonly permits: number,
    readonly limit: number,
  ) {
    super(
      'PERMITS_OVER_LIMIT',
      `Semaphore "${lockName}" cannot grant ${permits} permits: its limit is now ${limit} (setLimit)`,
    );
  }
}

/** What one node of a Redlock quorum did with one request. */
export type NodeOutcome =
  /** The request succeeded there (the lock taken, extended, released or read). */
  | { readonly node: number; readonly outcome: 'won' }
  /** The node answered no: someone else holds the lock there (or our token is not there). */
  | { readonly node: number; readonly outcome: 'held' }
  /** The node failed (connection refused or reset, a Redis error). */
  | { readonly node: number; readonly outcome: 'error'; readonly error: unknown }
  /** No reply within the per-node timeout (`nodeTimeoutMs`). */
  | { readonly node: number; readonly outcome: 'timed-out' }
  /** Not answered yet when the outcome was already decided by the other nodes. */
  | { readonly node: number; readonly outcome: 'pending' };

/**
 * A Redlock request could not reach a quorum (⌊N/2⌋+1 nodes) because nodes failed or did not answer
 * in time; `nodes` says what each one did. Contention is not this error (`acquire()` waits,
 * `tryAcquire()` resolves `null`). Whatever the attempt took was released on every node.
 * `acquire()` retries it while it has time and rejects with the last one.
 */
export class QuorumError extends LockError {
  override readonly name = 'QuorumError';
  constructor(
    readonly lockName: string,
    /** What was asked of the nodes: `acquire`, `extend`, `release` or `inspect`. */
    readonly operation: string,
    readonly quorum: number,
    readonly nodes: readonly NodeOutcome[],
  ) {
    const described = nodes
      .map((n) => `node ${n.node} ${n.outcome}${n.outcome === 'error' ? ` (${errorText(n.error)})` : ''}`)
      .join(', ');
    super(
      'NO_QUORUM',
      `Redlock "${lockName}": ${operation} reached no quorum (${quorum} of ${nodes.length} nodes needed): ${described}`,
      { cause: nodes.find((n) => n.outcome === 'error')?.error },
    );
  }
}

/** Whether an attempt's error may go away by itself (retried while the caller has time). */
export function isRetryable(error: unknown): boolean {
  return !(error instanceof LockError) || error instanceof QuorumError;
}

/**
 * The rejection of a call that could not reach Redis, with `cause` the last error: a quorum that
 * could not be reached (Redlock) is its own answer, saying per node why.
 */
export function unavailableError(
  lockName: string,
  detail: string,
  cause: unknown,
): RedisUnavailableError | QuorumError {
  return cause instanceof QuorumError ? cause : new RedisUnavailableError(lockName, detail, { cause });
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The call would wait for a lock its own async context holds, and so for ever: a write lock asked
 * for inside a `using()` of the same read-write lock's read side (an upgrade; two readers upgrading
 * at once would each wait for the other), or a read lock inside its write side's `using()`.
 */
export class WouldDeadlockError extends LockError {
  override readonly name = 'WouldDeadlockError';
  constructor(
    readonly lockName: string,
    message: string,
  ) {
    super('WOULD_DEADLOCK', `Lock "${lockName}": ${message}`);
  }
}

/** The object passed as a Redis client is neither ioredis nor node-redis. */
export class UnsupportedClientError extends LockError {
  override readonly name = 'UnsupportedClientError';
  constructor(detail: string) {
    super('UNSUPPORTED_CLIENT', `Expected an ioredis, iovalkey or node-redis (v4+) client, got ${detail}`);
  }
}

/** The server is older than Locksmith needs (Redis 5: ZPOPMIN, script effects replication). */
export class UnsupportedServerError extends LockError {
  override readonly name = 'UnsupportedServerError';
  constructor(detail: string, options?: { cause?: unknown }) {
    super('UNSUPPORTED_SERVER', `Locksmith needs Redis 5 or later: ${detail}`, options);
  }
}

/**
 * The client cannot send commands and will not by itself: it was closed (`quit()`, `disconnect()`),
 * or a node-redis client was never `connect()`ed. Retrying cannot help; the message says what to do.
 */
export class ClientClosedError extends LockError {
  override readonly name = 'ClientClosedError';
  constructor(detail: string, options?: { cause?: unknown }) {
    super('CLIENT_CLOSED', `The Redis client cannot send commands: ${detail}`, options);
  }
}

/**
 * Redis could not be reached (connection refused or reset, no reply in time) for as long as the
 * operation could wait. `cause` is the client's last error. The lock state is unknown: anything this
 * call may have taken was given back best-effort, and expires by its TTL otherwise.
 */
export class RedisUnavailableError extends LockError {
  override readonly name = 'RedisUnavailableError';
  constructor(
    readonly lockName: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super('REDIS_UNAVAILABLE', `Redis is unavailable for lock "${lockName}": ${detail}`, options);
  }
}

/**
 * Fewer replicas than `minReplicaAcks` acknowledged a grant or an extension within
 * `replicaAckTimeoutMs` (Redis `WAIT`): a failover now could lose the lock. An acquisition that
 * gets it has given the lock back.
 */
export class NotReplicatedError extends LockError {
  override readonly name = 'NotReplicatedError';
  constructor(
    readonly lockName: string,
    /** How many replicas acknowledged in time. */
    readonly acked: number,
    /** How many had to (`minReplicaAcks`). */
    readonly required: number,
    timeoutMs: number,
  ) {
    super(
      'NOT_REPLICATED',
      `Lock "${lockName}": ${acked} of the ${required} replicas required (minReplicaAcks) acknowledged within ${timeoutMs} ms`,
    );
  }
}

/**
 * Redis refused a command in a way a retry cannot fix (missing ACL permission, a wrong key type, a
 * script error). `cause` is the server's error.
 */
export class RedisCommandError extends LockError {
  override readonly name = 'RedisCommandError';
  constructor(detail: string, options?: { cause?: unknown }) {
    super('REDIS_ERROR', detail, options);
  }
}

/** A script's reply did not have the shape Locksmith expects (a proxy or client that alters replies). */
export class UnexpectedReplyError extends LockError {
  override readonly name = 'UnexpectedReplyError';
  constructor(
    readonly script: string,
    readonly reply: unknown,
  ) {
    super(
      'UNEXPECTED_REPLY',
      `Unexpected reply from Locksmith script ${script}: ${safeJson(reply)}. Is a proxy or client option ` +
        'changing replies (e.g. a node-redis type mapping)?',
    );
  }
}

function safeJson(value: unknown): string {
  try {
    return (
      JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(value)
    );
  } catch {
    return String(value);
  }
}

/**
 * A `MultiMutex` on a Redis Cluster client was given names in more than one hash slot: its
 * all-or-none step is one script, which Redis runs only over keys of one slot. Give the names one
 * hash tag (the text before the first `}` of each name, since a lock's keys are `prefix:{name}…`:
 * `order}sku-1`, `order}sku-2`), or take them as separate locks in one fixed order.
 */
export class CrossSlotError extends LockError {
  override readonly name = 'CrossSlotError';
  constructor(readonly names: readonly string[]) {
    super(
      'CROSS_SLOT',
      `MultiMutex names ${JSON.stringify(names)} are in more than one Redis Cluster hash slot: a MultiMutex takes its names in one script, so on a cluster they must share a hash tag (the text before the first \`}\` of each name, e.g. \`order}sku-1\`, \`order}sku-2\`)`,
    );
  }
}
