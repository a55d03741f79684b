/** Messages between the benchmark's parent and its worker processes. */
export type ToWorker =
  /**
   * `acquirers`: how many acquire loops the worker runs at once on the key (1 in the N × 1 cells, C in
   * the P × C cells), all on the one lock object its implementation creates per process.
   */
  | { type: 'prepare'; implId: string; key: string; csMs: number; acquirers: number }
  /**
   * Run from `warmFrom` (not measured: JIT compilation, connection set-up, the first subscriptions),
   * then measure from `startAt` to `endAt` (Date.now() instants, common to every worker).
   */
  | { type: 'go'; warmFrom: number; startAt: number; endAt: number }
  | { type: 'multikey'; implId: string; keys: number; prefix: string; durationMs: number }
  | { type: 'exit' };

/** How long after a cell's window a client may still be inside `acquire()` before it counts as stuck. */
export const STUCK_AFTER_MS = 2_000;

/** Numbers per acquisition in `CellResult.stamps`: acquirer, called, entered, left. */
export const STAMP_FIELDS = 4;

export interface CellResult {
  /**
   * Per acquisition in the window: the acquirer (its loop in this process, from 0), called, entered,
   * left (µs, CLOCK_MONOTONIC), flattened (`STAMP_FIELDS` numbers each).
   */
  stamps: number[];
  /** The acquire loops this process ran. */
  acquirers: number;
  tries: number;
  roundTrips: number;
  errors: number;
  errorSamples: string[];
  /** CPU time this client process used during the window (user + system), µs. */
  cpuUs: number;
  /**
   * Acquire loops of this process still inside `acquire()` `STUCK_AFTER_MS` after the window ended
   * (their calls are abandoned: released if they ever return). Issue #12 asks for these: some
   * Redlock libraries leave clients waiting long after their peers gave up the lock.
   */
  stuckAcquirers: number;
  /** The read-write lock side this client took (read-write cells only). */
  role?: 'read' | 'write' | undefined;
}

export type ToParent =
  | { type: 'ready' }
  | { type: 'result'; result: CellResult }
  | { type: 'multikey-result'; cycles: number; errors: number; elapsedMs: number; roundTrips: number }
  | { type: 'failed'; message: string };
