import type { Clock } from '../clock.js';
import type { Plan } from '../plan.js';
import type { HandOffAcquireResult } from '../protocol/hand-off.js';
import type { Attempts, Outcome } from '../waiting/attempts.js';
import { type QueueEntry, Ticket } from '../waiting/ticket.js';
import { Wake, type WakeChannel } from '../waiting/wake.js';
import { Waiter } from './hand-off-waiter.js';

/** What a kind that queues its waiters and hands grants to them by a message says of one call. */
export interface Queue {
  /** How long a waiter's entry lives unrenewed. */
  readonly waiterTtlMs: number;
  /**
   * How long a waiter is left asleep by releases that free the lock (the Mutex's window), counted
   * from its arrival: it wakes by itself then, to be handed the lock at the next release.
   */
  readonly dueAfterMs?: number | undefined;
  /** Whether this call queues when it finds the lock taken (a single try never does). */
  readonly queues: boolean;
  /** The channel this call hears its hand-off on, with the filter that picks its messages. */
  channel(accept: (message: string) => boolean): WakeChannel;
  /** A message for this call that is not its hand-off: true to wake it (a Semaphore's refusal). */
  hearOther?(message: string): boolean;
  /**
   * One enqueue-or-acquire script call (`maybeQueued`: an earlier attempt may have queued it;
   * `arrivalMs`: the server ms the call first joined the queue, 0 before it did).
   */
  send(entry: QueueEntry, maybeQueued: boolean, arrivalMs: number): Promise<HandOffAcquireResult>;
}

/**
 * The attempts of one call to a kind that queues its waiters in FIFO order and hands grants to
 * them by a message (the Mutex's, the FairMutex's, the Semaphore's): once the hand-off message has
 * been heard, no round trip at all; otherwise `send` runs the kind's enqueue-or-acquire script,
 * which queues the caller on the first call and renews its entry (and finds a hand-off whose
 * message was missed) on later ones.
 */
export function queuedAttempts(plan: Plan, queue: Queue): Attempts {
  const { clock, wakeOnRelease } = plan.options;
  const waiter = new Waiter(plan.token, clock, plan.queueArrival);
  const ticket = new Ticket(queue.queues ? plan.deadline : undefined, queue.waiterTtlMs, wakeOnRelease);
  const { hearOther } = queue;
  const channel = queue.channel(
    hearOther ? (message) => waiter.hear(message) || hearOther(message) : (message) => waiter.hear(message),
  );
  return {
    attempt: () => {
      const handOff = waiter.handOff();
      // A grant with no validity left (a hand-off heard too late, a reply after a pause) is handed
      // on by the waiting loop, which alone knows whether this attempt is the call's current one.
      // Known without a round trip, so returned as is (no promise: this is every contended
      // acquisition).
      if (handOff) return { acquired: true, fencingToken: handOff.fencingToken, sentAt: handOff.sentAt };
      return sendAttempt(waiter, ticket, channel, clock, queue);
    },
    wake: wakeOnRelease ? new Wake([channel]) : undefined,
  };
}

async function sendAttempt(
  waiter: Waiter,
  ticket: Ticket,
  channel: WakeChannel,
  clock: Clock,
  queue: Queue,
): Promise<Outcome> {
  const sentAt = clock.now();
  const sentAtWall = clock.wallNow?.();
  ticket.join(sentAt);
  const result = await queue.send(ticket.entry(channel), waiter.noteAttempt(), waiter.arrivalMs);
  // Acquired in this reply: the script set the TTL (or restarted it, after a hand-off whose message
  // we missed) while serving this request, so counting from its send time errs on the safe side.
  if (result.acquired) {
    waiter.noteGrant(result.fencingToken);
    return { acquired: true, fencingToken: result.fencingToken, sentAt, sentAtWall };
  }
  waiter.anchor(sentAt, result.serverTimeMs, ticket.queued);
  // A bound of 0 is a holder in its last millisecond (Redis rounds down): try again at once, since a
  // holder that crashed will never hand on. Only -1 (nothing bounds it) leaves us to the message.
  const bound = result.waitBoundMs;
  const holderPttlMs = bound >= 0 ? Math.max(1, bound) : Number.POSITIVE_INFINITY;
  // Not yet due: wake when it is (a renewal, not a retry), 1 ms past for TIME's truncation.
  const dueInMs =
    queue.dueAfterMs !== undefined && waiter.arrivalMs > 0
      ? waiter.arrivalMs + queue.dueAfterMs - result.serverTimeMs
      : 0;
  const renewInMs = dueInMs > 0 ? Math.min(ticket.renewInMs(), dueInMs + 1) : ticket.renewInMs();
  return { acquired: false, holderPttlMs, renewInMs, leftState: ticket.queued };
}
