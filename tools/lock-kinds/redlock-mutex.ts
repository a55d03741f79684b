/**
 * What the harnesses know of the RedlockMutex beyond its constructor: the contract's options for a
 * quorum of one.
 */
/**
 * The contract runs on a quorum of one server: the contract of a lock, over the Redlock's line,
 * hand-off and fan-out (redlock.test.ts covers 3 and 5 servers, slow nodes and the hand-off-after
 * window). The contract's waiters never poll, so: no `retryDelayMs` (50 ms by default for this
 * kind), and places that need no renewal within a test (1 s by default: waiters renew every third);
 * and a node may take a loaded machine's time to answer (50 ms by default).
 */
export const CONTRACT_REDLOCK_OPTIONS = {
  retryDelayMs: Number.POSITIVE_INFINITY,
  waiterTtlMs: 30_000,
  nodeTimeoutMs: 1_000,
} as const;
