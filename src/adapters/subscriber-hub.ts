import { emitLockEvent } from '../events.js';
import { timerDelayMs } from '../timing.js';
import type { ClientContext } from './client-context.js';
import type { RedisDriver, SubscriberConnection } from './driver.js';

/**
 * A waiter's view of one channel: it remembers whether a message arrived since it last waited,
 * so a release that lands between "try" and "wait" is never missed.
 */
export interface ChannelWatch {
  /**
   * Resolves when a message arrives (or one already arrived since the previous call), or after
   * `timeoutMs`. Rejects with the signal's reason when `signal` aborts.
   */
  next(timeoutMs: number, signal?: AbortSignal): Promise<'message' | 'timeout'>;
  /** The last message received since the previous `next()`, if any. */
  readonly lastMessage: string | undefined;
  close(): void;
}

/** How many channels whose SUBSCRIBE failed a hub remembers. */
const MAX_FAILED_CHANNELS = 1_000;

/**
 * How long a SUBSCRIBE may go unanswered, the opening of the connection included, before the hub
 * gives it up as failed. A subscriber that cannot authenticate (or reach its server) may queue
 * SUBSCRIBE for ever: its waiters stayed attached, and the connection kept the process alive.
 * Generous (a healthy SUBSCRIBE takes a round trip or two, a cluster subscriber's opening a few):
 * waiters fall back to polling within their holder's bound meanwhile, as on any failed SUBSCRIBE.
 */
export const SUBSCRIBE_BOUND_MS = 5_000;

interface ChannelState {
  readonly watchers: Set<Watch>;
  /** Resolves once SUBSCRIBE is confirmed; rejects if it failed. */
  ready: Promise<void>;
  active: boolean;
  linger: NodeJS.Timeout | undefined;
}

/**
 * Decides whether a message on the channel is for this watcher (a FairMutex waiter hears only its
 * own hand-off). It may keep what it parsed; it runs synchronously as the message arrives.
 */
export type MessageFilter = (message: string) => boolean;

/**
 * One waiter's latch: whether a message came since it last waited, and how to wake it. The hub's
 * watches are latches; a watch over several hubs (a Redlock quorum's) keeps one of its own.
 */
export interface MessageLatch {
  accept: MessageFilter | undefined;
  pending: boolean;
  message: string | undefined;
  wake: (() => void) | undefined;
}

/**
 * One waiter's watch: the hub's entry for it and the waiter's handle in one object (a class, not a
 * literal with a getter and closures: one is made per waiting acquisition).
 */
class Watch implements ChannelWatch, MessageLatch {
  pending = false;
  message: string | undefined = undefined;
  wake: (() => void) | undefined = undefined;
  private closed = false;

  constructor(
    readonly accept: MessageFilter | undefined,
    private readonly detach: () => void,
  ) {}

  get lastMessage(): string | undefined {
    return this.message;
  }

  next(timeoutMs: number, signal?: AbortSignal): Promise<'message' | 'timeout'> {
    return waitForMessage(this, timeoutMs, signal);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.detach();
    this.wake?.();
  }
}

/**
 * One subscriber connection per client, shared by every waiter, reference-counted per channel.
 * A channel stays subscribed for `lingerMs` after its last waiter leaves, so a busy lock does not
 * pay a SUBSCRIBE/UNSUBSCRIBE round trip per acquisition; the connection closes when no channel is
 * left. It keeps the process alive only while a waiter is attached: lingering, it is unreferenced,
 * so a process whose work is done exits at once.
 */
export class SubscriberHub {
  private connection: Promise<SubscriberConnection> | undefined;
  private readonly channels = new Map<string, ChannelState>();
  /** Channels whose last SUBSCRIBE failed (an ACL without channels, a proxy without pub/sub). */
  private readonly failedChannels = new Set<string>();
  /** Waiters attached on every channel: the connection keeps the process alive while > 0. */
  private watchers = 0;

  constructor(
    private readonly driver: RedisDriver,
    private readonly lingerMs = 1_000,
    private readonly subscribeBoundMs = SUBSCRIBE_BOUND_MS,
  ) {}

  /**
   * Whether the last SUBSCRIBE to `channel` failed (and none succeeded since): a waiter then asks to
   * be handed the lock without a message (it polls, and finds the grant when it next asks).
   */
  subscribeFailed(channel: string): boolean {
    return this.failedChannels.has(channel);
  }

  /** A watch on a channel that is already subscribed, without any round trip; else undefined. */
  watchIfActive(channel: string, accept?: MessageFilter): ChannelWatch | undefined {
    const state = this.channels.get(channel);
    if (!state?.active) return undefined;
    return this.attach(channel, state, accept);
  }

  /**
   * A watch that is live once this resolves: every message published afterwards reaches it. When
   * subscribing fails, it rejects with the client's error, and, given the `lockName` the watch is
   * for, reports a `subscribe-failed` event for it (the caller then waits without messages).
   */
  async watch(channel: string, accept?: MessageFilter, lockName?: string): Promise<ChannelWatch> {
    let state = this.channels.get(channel);
    if (!state) {
      const created: ChannelState = {
        watchers: new Set(),
        ready: Promise.resolve(),
        active: false,
        linger: undefined,
      };
      created.ready = this.subscribe(channel, created);
      state = created;
      this.channels.set(channel, state);
    }
    const watch = this.attach(channel, state, accept);
    try {
      await state.ready;
    } catch (error) {
      watch.close();
      if (lockName !== undefined) emitLockEvent({ type: 'subscribe-failed', lockName, error });
      throw error;
    }
    return watch;
  }

  /**
   * Records that subscribing to `channel` failed without the hub seeing it fail (the waiting loop
   * gave up on a SUBSCRIBE that did not answer): as `subscribeFailed` after a refusal.
   */
  noteSubscribeFailed(channel: string): void {
    this.failedChannels.add(channel);
    // Bounded (one entry per lock name): the oldest is forgotten, which costs at most a waiter
    // that joins with its channel and is skipped once before it polls silently.
    if (this.failedChannels.size > MAX_FAILED_CHANNELS) {
      const oldest = this.failedChannels.values().next().value;
      if (oldest !== undefined) this.failedChannels.delete(oldest);
    }
  }

  /** Closes the connection now (waiters fall back to timed waits). */
  async close(): Promise<void> {
    for (const state of this.channels.values()) clearTimeout(state.linger);
    this.channels.clear();
    const connection = this.connection;
    this.connection = undefined;
    if (connection) await closeConnection(connection);
  }

  private async subscribe(channel: string, state: ChannelState): Promise<void> {
    this.connection ??= this.open();
    const connection = this.connection;
    try {
      await answeredWithin(
        connection.then((c) => c.subscribe(channel)),
        this.subscribeBoundMs,
        `SUBSCRIBE (on a connection opened for it, if need be) did not answer within ${this.subscribeBoundMs} ms`,
      );
      state.active = true;
      this.failedChannels.delete(channel);
    } catch (error) {
      this.noteSubscribeFailed(channel);
      // Forget the failed state so the next waiter tries again instead of inheriting the failure.
      if (this.channels.get(channel) === state) this.channels.delete(channel);
      // A connection no channel uses any more is closed now: left open (SUBSCRIBE refused by an
      // ACL, failed by a client option), it kept the process alive, one more per waiting acquire.
      if (this.channels.size === 0 && this.connection === connection) {
        this.connection = undefined;
        void closeConnection(connection);
      }
      throw error;
    }
  }

  /** Opens the connection; a failed opening is forgotten at once (the driver closed what it opened). */
  private open(): Promise<SubscriberConnection> {
    const opening = this.driver.openSubscriber((from, message) => this.deliver(from, message));
    // Waiters may have come and gone while it opened: start it as `countWatchers` would have left it.
    opening.then(
      (c) => c.keepAlive(this.watchers > 0),
      () => {
        if (this.connection === opening) this.connection = undefined;
      },
    );
    return opening;
  }

  private deliver(channel: string, message: string): void {
    const state = this.channels.get(channel);
    if (!state) return;
    for (const watcher of state.watchers) {
      if (watcher.accept && !watcher.accept(message)) continue;
      watcher.pending = true;
      watcher.message = message;
      watcher.wake?.();
    }
  }

  private attach(channel: string, state: ChannelState, accept: MessageFilter | undefined): ChannelWatch {
    clearTimeout(state.linger);
    state.linger = undefined;
    const watch = new Watch(accept, () => {
      state.watchers.delete(watch);
      this.countWatchers(-1);
      if (state.watchers.size === 0) this.scheduleUnsubscribe(channel, state);
    });
    state.watchers.add(watch);
    this.countWatchers(1);
    return watch;
  }

  /** Keeps the process alive from the first attached waiter to the last one's leaving. */
  private countWatchers(delta: 1 | -1): void {
    this.watchers += delta;
    if (this.watchers > 1 || (this.watchers === 1 && delta < 0)) return;
    const alive = this.watchers > 0;
    void this.connection?.then((c) => c.keepAlive(alive)).catch(() => {});
  }

  private scheduleUnsubscribe(channel: string, state: ChannelState): void {
    state.linger = setTimeout(() => {
      if (state.watchers.size > 0 || this.channels.get(channel) !== state) return;
      this.channels.delete(channel);
      const connection = this.connection;
      if (!connection) return;
      if (this.channels.size === 0) {
        this.connection = undefined;
        void closeConnection(connection);
      } else {
        void connection.then((c) => c.unsubscribe(channel)).catch(() => {});
      }
    }, this.lingerMs);
    state.linger.unref();
  }
}

/**
 * Closes a subscriber connection, unreferenced first: closing may take a while (GLIDE's core ends
 * its side of a closed client's socket later), and a connection being closed holds no process,
 * whoever was attached when it opened. Never rejects.
 */
function closeConnection(connection: Promise<SubscriberConnection>): Promise<void> {
  return connection
    .then((c) => {
      c.keepAlive(false);
      return c.close();
    })
    .catch(() => {});
}

/**
 * `sent`, or a rejection with `message` once it has not settled within `boundMs` (its own later
 * outcome is then ignored). The timer does not keep the process alive.
 */
function answeredWithin(sent: Promise<void>, boundMs: number, message: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const unanswered = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), timerDelayMs(boundMs));
    timer.unref();
  });
  sent.catch(() => {});
  return Promise.race([sent, unanswered]).finally(() => clearTimeout(timer));
}

/** Waits on a latch for a message (or one that already came), at most `timeoutMs`. */
export function waitForMessage(
  watcher: MessageLatch,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<'message' | 'timeout'> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (watcher.pending) {
    watcher.pending = false;
    return Promise.resolve('message');
  }
  watcher.message = undefined;
  return new Promise((resolve, reject) => {
    const finish = (outcome: 'message' | 'timeout' | 'abort') => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      watcher.wake = undefined;
      if (outcome === 'abort') {
        reject(signal?.reason);
        return;
      }
      watcher.pending = false;
      resolve(outcome);
    };
    const onAbort = () => finish('abort');
    const timer = setTimeout(() => finish('timeout'), timerDelayMs(timeoutMs));
    watcher.wake = () => finish('message');
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The hub shared by every lock built on the same client. */
export function hubFor(context: ClientContext): SubscriberHub {
  context.hub ??= new SubscriberHub(context.driver);
  return context.hub;
}
