import type { Clock } from '../clock.js';
import type { QueueArrival } from '../plan.js';
import { decodeHandOff, isFreeWake } from '../protocol/hand-off.js';

/** The server's `TIME` as the scripts read it: whole milliseconds, truncated. */
const SERVER_TIME_RESOLUTION_MS = 1;

/**
 * One acquire call's view of its hand-off, on one queue (a Redlock call has one per node).
 *
 * Validity of a handed-off lease: its TTL started on the server at the hand-off, which this process
 * learns of only when the message arrives, some time later. The lease must count from an instant no
 * later than the hand-off. Every queued reply carries the server's clock (TIME) read while serving
 * a request we sent at local instant `sentAt`, so that server instant lies after `sentAt`; the
 * hand-off message carries the server's clock at the hand-off. The hand-off therefore happened, in
 * local monotonic time, no earlier than `sentAt + (grantServerMs − queuedServerMs)`, which is the
 * instant we count from: it is exact up to the request's one-way latency, which only errs on the safe
 * side, and the lease's drift allowance (ttl·driftFactor + 2 ms) covers the two clocks' rates and
 * TIME's millisecond rounding. `sentAt` itself is a bound that needs no clock at all (the hand-off
 * cannot precede the request that queued us), so it is the floor, and the fallback when the server's
 * clock visibly stepped (an estimate more than TIME's 1 ms resolution after the message's arrival is impossible). What remains
 * assumed is that the server's wall clock is not stepped forward while we wait.
 */
export class Waiter {
  private anchorSentAt = Number.NaN;
  private anchorServerMs = Number.NaN;
  /**
   * Only a reply to a request sent at or after this local instant anchors: the latest anchor's
   * request, or the last hand-off taken (see `handOff`).
   */
  private anchorsFrom = Number.NEGATIVE_INFINITY;
  private heard: { fencingToken: number; grantServerMs: number; receivedAt: number } | undefined;
  /**
   * The newest grant this call already had, by fencing token (from a reply or a hand-off it took).
   * A hand-off message for it, or for an older one, is stale: that grant was used or handed on.
   */
  private newestGrant = 0;
  private attempted = false;
  constructor(
    readonly token: string,
    private readonly clock: Clock,
    /** The server ms this call first joined the queue (from the reply that queued it); 0: not yet. */
    private readonly arrival: QueueArrival = { ms: 0 },
  ) {}

  /** Counts an attempt about to be sent; true when an earlier one may have queued this waiter. */
  noteAttempt(): boolean {
    const earlier = this.attempted;
    this.attempted = true;
    return earlier;
  }

  /**
   * Remembers a queued reply: the request was sent at `sentAt`, the server read `serverTimeMs`;
   * `queued`: the request queued this call (or renewed its entry), the first such reply dates its
   * arrival.
   */
  anchor(sentAt: number, serverTimeMs: number, queued = false): void {
    if (queued && this.arrival.ms === 0) this.arrival.ms = serverTimeMs;
    // A late reply to an earlier request (one the waiting loop abandoned) would move the anchor back
    // before a give-back that took a later grant away, and that grant's message would pass as fresh.
    if (sentAt < this.anchorsFrom) return;
    this.anchorsFrom = sentAt;
    this.anchorSentAt = sentAt;
    this.anchorServerMs = serverTimeMs;
  }

  /**
   * When this call first joined the queue, by the server's clock (0: not yet): sent with each
   * attempt, so an entry queued again (its earlier one was dropped) keeps the call's age.
   */
  get arrivalMs(): number {
    return this.arrival.ms;
  }

  /**
   * Remembers a grant an attempt's reply reported (the lock was ours when the script ran, perhaps by
   * a hand-off whose message is still on its way). Its message, if it comes, is then ignored: the
   * waiting loop used that grant, or handed it on when it came too late to be usable, and a message
   * arriving after that must not make it a grant again.
   */
  noteGrant(fencingToken: number): void {
    this.newestGrant = Math.max(this.newestGrant, fencingToken);
  }

  /**
   * The hub's filter: true (and the hand-off kept) when the message is this waiter's hand-off, or a
   * release's wake for it (the lock was freed, not handed over: nothing is kept, the waiting loop
   * simply asks again at once).
   */
  hear(message: string): boolean {
    if (this.heard) return false;
    const handOff = decodeHandOff(message, this.token);
    if (!handOff) return isFreeWake(message, this.token);
    if (handOff.fencingToken <= this.newestGrant) return false;
    this.heard = {
      fencingToken: handOff.fencingToken,
      grantServerMs: handOff.grantServerMs,
      receivedAt: this.clock.now(),
    };
    return true;
  }

  /**
   * The hand-off, once heard and anchored. A message can overtake the reply that queued us (they
   * travel on different connections); the waiting loop asks only after that reply arrived.
   */
  handOff(): { fencingToken: number; sentAt: number } | undefined {
    const heard = this.heard;
    if (!heard || Number.isNaN(this.anchorSentAt)) return undefined;
    // A grant a reply reported after the message was heard: already used or handed on. (Were it
    // still ours, the next attempt's reply says so.)
    if (heard.fencingToken <= this.newestGrant) {
      this.heard = undefined;
      return undefined;
    }
    // A hand-off older than our latest queued reply is stale: the server saw us *not* holding the
    // lock after it (we were frozen through our turn, our TTL ran out and the lock moved on). Taking
    // it as a grant would make two holders. Forget it, so a later hand-off can be heard.
    if (heard.grantServerMs < this.anchorServerMs) {
      this.heard = undefined;
      return undefined;
    }
    const floor = this.anchorSentAt;
    const estimate = floor + (heard.grantServerMs - this.anchorServerMs);
    // TIME is truncated to whole ms on both readings, so an estimate up to 1 ms after the message's
    // arrival is rounding, not a clock step (taking it for one cost ~1 in 8 hand-offs most of
    // their validity): clamp it to the arrival. Only an estimate beyond that means the clock moved.
    const stepped = estimate > heard.receivedAt + SERVER_TIME_RESOLUTION_MS;
    const sentAt = stepped ? floor : Math.max(floor, Math.min(estimate, heard.receivedAt));
    // One-shot: if this grant turns out unusable (no validity left) it is handed on, and only a
    // later hand-off may be taken. That give-back releases whatever this token holds by then, a
    // later grant too (found by the fault suite, Semaphore, workers paused at random): so the next
    // hand-off counts only once a request sent after this one anchored it, and is then stale if older.
    this.heard = undefined;
    this.anchorSentAt = Number.NaN;
    this.anchorServerMs = Number.NaN;
    this.anchorsFrom = this.clock.now();
    this.noteGrant(heard.fencingToken);
    return { fencingToken: heard.fencingToken, sentAt };
  }
}
