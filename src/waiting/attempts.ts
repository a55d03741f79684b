import type { Grant } from '../plan.js';
import type { Wake } from './wake.js';

/** What one attempt at a lock tells: we got it, or how long the holder still has. */
export type Outcome =
  | ({ readonly acquired: true } & Grant)
  | {
      readonly acquired: false;
      /** How long the holder still has (-1: nothing bounds it; wait for a message). */
      readonly holderPttlMs: number;
      /** When the attempt's entry in a queue must be renewed: a wake-up for it is not a retry. */
      readonly renewInMs?: number;
      /**
       * The attempt left state in Redis (a queue entry) that outlives it: when its reply comes after
       * the call gave up, the token is given back again (a client that re-sent the attempt after a
       * reconnect may have queued it after the call's own give-back).
       */
      readonly leftState?: boolean;
    };

/** The attempts of one call, as its lock kind makes them: all the waiting loop asks of a kind. */
export interface Attempts {
  /**
   * One attempt: a round trip, or, when the kind already knows the outcome (a heard hand-off),
   * that outcome as is (nothing sent, so nothing to wait for or time out).
   */
  attempt(): Outcome | Promise<Outcome>;
  /** Where a release or hand-off wakes the call; undefined: timed waits only (`wakeOnRelease: false`). */
  readonly wake?: Wake;
}
