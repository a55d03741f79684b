import type { SubscriberHub } from '../adapters/subscriber-hub.js';
import type { Clock } from '../clock.js';
import type { FairAcquireResult } from '../protocol/fair-mutex.js';
import type { AttemptOutcome } from './acquisition.js';
import type { Waiter } from './fair-waiter.js';

/**
 * How often, at least, a waiter queued without a channel asks again (a lock handed to it silently
 * stays idle until it does).
 */
export const SILENT_ENTRY_POLL_MS = 50;

/**
 * The longest a place queued without a channel lives unrenewed. Nothing tells a release that such a
 * waiter is gone (no subscriber count to read), so a dead one may be handed the lock until its place
 * expires; the waiter renews it with every poll, far more often than this.
 */
export const SILENT_ENTRY_TTL_MS = 1_000;

/**
 * The channel and place lifetime one enqueue names: `channel` and `entryTtlMs` as they are, or, for
 * a waiter that will not hear its channel (it does not listen: `wakeOnRelease: false`; or
 * subscribing to `channel` failed on `hub`), no channel (hand-offs to it are silent, never skipped
 * as gone) and a place of at most `SILENT_ENTRY_TTL_MS`. Shared by every queued kind and Redlock.
 */
export function queuePlace(
  hub: SubscriberHub,
  channel: string,
  entryTtlMs: number,
  listening: boolean,
): { grantChannel: string; entryTtlMs: number } {
  if (listening && !hub.subscribeFailed(channel)) return { grantChannel: channel, entryTtlMs };
  return { grantChannel: '', entryTtlMs: Math.min(entryTtlMs, SILENT_ENTRY_TTL_MS) };
}

/** Where one call's queued attempts place it: its hub and channel, and whether it listens there. */
export interface QueueOptions {
  readonly clock: Clock;
  readonly waiterTtlMs: number;
  readonly hub: SubscriberHub;
  readonly channel: string;
  readonly listening: boolean;
}

/**
 * One attempt of a lock kind that queues its waiters in FIFO order and hands grants to them by a
 * message (the FairMutex's shape, which the Semaphore shares): once the hand-off message has been
 * heard, no round trip at all; otherwise `send` runs the kind's enqueue-or-acquire script, which
 * queues the caller on the first call and renews its place (and finds a hand-off whose message was
 * missed) on later ones. Without a `deadline` (a single try) nothing is queued.
 */
export function queuedAttempt(
  waiter: Waiter,
  options: QueueOptions,
  deadline: number | undefined,
  send: (place: { grantChannel: string; entryTtlMs: number }) => Promise<FairAcquireResult>,
): AttemptOutcome | Promise<AttemptOutcome> {
  const handOff = waiter.handOff();
  // A grant with no validity left (a hand-off heard too late, a reply after a pause) is handed on
  // by the waiting loop, which alone knows whether this attempt is the call's current one. Known
  // without a round trip, so returned as is (no promise: this is every contended acquisition).
  if (handOff) return { acquired: true, fencingToken: handOff.fencingToken, sentAt: handOff.sentAt };
  return sendAttempt(waiter, options, deadline, send);
}

async function sendAttempt(
  waiter: Waiter,
  options: QueueOptions,
  deadline: number | undefined,
  send: (place: { grantChannel: string; entryTtlMs: number }) => Promise<FairAcquireResult>,
): Promise<AttemptOutcome> {
  const { clock } = options;
  const sentAt = clock.now();
  const sentAtWall = clock.wallNow?.();
  const remainingMs = deadline === undefined ? 0 : deadline - sentAt;
  const place = queuePlace(
    options.hub,
    options.channel,
    deadline === undefined ? 0 : Math.max(1, Math.ceil(Math.min(remainingMs, options.waiterTtlMs))),
    options.listening,
  );
  // Queued without a channel once, the entry may keep that for the rest of the call (a later
  // SUBSCRIBE does not change it), so the waiter keeps asking at the silent pace.
  if (place.grantChannel === '') waiter.queuedSilently = true;
  const { entryTtlMs } = place;
  const result = await send(place);
  // Acquired in this reply: the script set the TTL (or restarted it, after a hand-off whose message
  // we missed) while serving this request, so counting from its send time errs on the safe side.
  if (result.acquired) {
    waiter.noteGrant(result.fencingToken);
    return { acquired: true, fencingToken: result.fencingToken, sentAt, sentAtWall };
  }
  waiter.anchor(sentAt, result.serverTimeMs);
  // Wake to renew the place before it expires (only when it is shorter than our own deadline), and
  // when the bound runs out: a crashed holder releases nothing, so a waiter's next attempt is what
  // hands the lock on. Queued without a channel, a hand-off is silent and only asking again finds
  // it: every SILENT_ENTRY_POLL_MS (a renewal, free as any, well within such a place's life).
  const renewInMs =
    entryTtlMs > 0 && waiter.queuedSilently
      ? SILENT_ENTRY_POLL_MS
      : entryTtlMs > 0 && entryTtlMs < remainingMs
        ? Math.max(1, Math.floor(entryTtlMs / 3))
        : Number.POSITIVE_INFINITY;
  // A bound of 0 is a holder in its last millisecond (Redis rounds down): try again at once, since a
  // holder that crashed will never hand on. Only -1 (nothing bounds it) leaves us to the message.
  const bound = result.waitBoundMs;
  const holderPttlMs = bound >= 0 ? Math.max(1, bound) : Number.POSITIVE_INFINITY;
  return { acquired: false, holderPttlMs, renewInMs, leftState: entryTtlMs > 0 };
}
