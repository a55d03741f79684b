import {
  type ChannelWatch,
  type MessageFilter,
  type MessageLatch,
  type SubscriberHub,
  waitForMessage,
} from '../adapters/subscriber-hub.js';

/** One channel a waiter may be woken on, and the hub (client) that carries it. */
export interface WakeChannel {
  readonly hub: SubscriberHub;
  readonly channel: string;
  /** Picks the messages meant for this waiter (default: every message on the channel). */
  readonly accept?: MessageFilter;
}

/** What the waiting loop waits on: a message on any of the call's channels, or a timeout. */
export interface Watch {
  /** Resolves on a message (or one that came since the last call), or after `timeoutMs`. */
  next(timeoutMs: number, signal?: AbortSignal): Promise<'message' | 'timeout'>;
  close(): void;
}

/** Whether a waiter on `channel` will hear it: its SUBSCRIBE has not failed on that client. */
export function canHear(channel: WakeChannel): boolean {
  return !channel.hub.subscribeFailed(channel.channel);
}

/**
 * Where one call is woken: one channel on one client, or one per node of a Redlock quorum (a
 * message on any of them wakes the call). The waiting loop sees only this, never a hub.
 */
export class Wake {
  constructor(readonly channels: readonly WakeChannel[]) {}

  /**
   * A watch on channels already subscribed, without any round trip; undefined unless every one is
   * (the loop then subscribes them all: a Redlock waiter listening on some nodes only would be
   * skipped as gone by the others' hand-offs).
   */
  ifActive(): Watch | undefined {
    const { channels } = this;
    if (channels.length === 1) {
      const [only] = channels as [WakeChannel];
      return only.hub.watchIfActive(only.channel, only.accept);
    }
    const merged = new MergedWatch();
    for (const wake of channels) {
      const watch = wake.hub.watchIfActive(wake.channel, merged.relay(wake.accept));
      if (!watch) {
        merged.close();
        return undefined;
      }
      merged.add(watch);
    }
    return merged;
  }

  /**
   * A watch that is live once this resolves. Over several channels it resolves as soon as one of
   * them is subscribed (a node that is down must not hold the waiter up; the others' messages
   * still wake it), the rest join as they subscribe; it rejects only when every one failed (with
   * the first error).
   */
  async watch(): Promise<Watch> {
    const { channels } = this;
    if (channels.length === 1) {
      const [only] = channels as [WakeChannel];
      return only.hub.watch(only.channel, only.accept);
    }
    const merged = new MergedWatch();
    const subscribing = channels.map((wake) =>
      wake.hub.watch(wake.channel, merged.relay(wake.accept)).then((live) => {
        merged.add(live);
        return merged;
      }),
    );
    try {
      return await Promise.any(subscribing);
    } catch (error) {
      merged.close();
      throw error instanceof AggregateError ? error.errors[0] : error;
    }
  }

  /**
   * A SUBSCRIBE that never answered: it failed for the hubs too, so this call's next attempts
   * queue without a channel (a Mutex skips a waiter nobody hears).
   */
  noteSubscribeFailed(): void {
    for (const wake of this.channels) wake.hub.noteSubscribeFailed(wake.channel);
  }
}

/** Several hubs' watches behind one latch: the hubs' own watchers never latch (the relay says no). */
class MergedWatch implements Watch {
  private readonly latch: MessageLatch = {
    accept: undefined,
    pending: false,
    message: undefined,
    wake: undefined,
  };
  private readonly parts: ChannelWatch[] = [];
  private closed = false;

  /** The filter given to each hub: it latches accepted messages here and declines for the hub. */
  relay(accept: MessageFilter | undefined): MessageFilter {
    return (message) => {
      if (accept && !accept(message)) return false;
      this.latch.pending = true;
      this.latch.message = message;
      this.latch.wake?.();
      return false;
    };
  }

  /** A hub's watch that became live; closed at once if this watch already was. */
  add(part: ChannelWatch): void {
    if (this.closed) part.close();
    else this.parts.push(part);
  }

  next(timeoutMs: number, signal?: AbortSignal): Promise<'message' | 'timeout'> {
    return waitForMessage(this.latch, timeoutMs, signal);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const part of this.parts.splice(0)) part.close();
    this.latch.wake?.();
  }
}
