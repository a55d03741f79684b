/** Messages between the benchmark's parent and its worker processes. */
export type ToWorker =
  | { type: 'prepare'; implId: string; key: string; csMs: number }
  /**
   * Run from `warmFrom` (not measured: JIT compilation, connection set-up, the first subscriptions),
   * then measure from `startAt` to `endAt` (Date.now() instants, common to every worker).
   */
  | { type: 'go'; warmFrom: number; startAt: number; endAt: number }
  | { type: 'multikey'; implId: string; keys: number; prefix: string; durationMs: number }
  | { type: 'exit' };

/** How long after a cell's window a client may still be inside `acquire()` before it counts as stuck. */
export const STUCK_AFTER_MS = 2_000;

export interface CellResult {
  /** Per acquisition in the window: called, entered, left (µs, CLOCK_MONOTONIC), flattened. */
  stamps: number[];
  tries: number;
  roundTrips: number;
  errors: number;
  errorSamples: string[];
  /** CPU time this client process used during the window (user + system), µs. */
  cpuUs: number;
  /**
   * The client was still inside `acquire()` `STUCK_AFTER_MS` after the window ended (the call is
   * abandoned: released if it ever returns). Issue #12 asks for these: some Redlock libraries leave
   * clients waiting long after their peers gave up the lock.
   */
  stuck: boolean;
  /** The read-write lock side this client took (read-write cells only). */
  role?: 'read' | 'write' | undefined;
}

export type ToParent =
  | { type: 'ready' }
  | { type: 'result'; result: CellResult }
  | { type: 'multikey-result'; cycles: number; errors: number; elapsedMs: number; roundTrips: number }
  | { type: 'failed'; message: string };
