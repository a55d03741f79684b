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

/**
 * A watch on channels already subscribed, without any round trip; undefined unless every one is
 * (the waiting loop then subscribes them all: a Redlock waiter listening on some nodes only would
 * be skipped as gone by the others' hand-offs). A single channel is its hub's own watch; several
 * (one per Redlock node) are merged: a message on any wakes.
 */
export function watchIfActive(channels: readonly WakeChannel[]): ChannelWatch | undefined {
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
 * A watch that is live once this resolves. Over several channels it resolves as soon as one of them
 * is subscribed (a node that is down must not hold the waiter up; the others' messages still wake
 * it), the rest join as they subscribe; it rejects only when every one failed (with the first error).
 */
export async function watch(channels: readonly WakeChannel[], lockName?: string): Promise<ChannelWatch> {
  if (channels.length === 1) {
    const [only] = channels as [WakeChannel];
    return only.hub.watch(only.channel, only.accept, lockName);
  }
  const merged = new MergedWatch();
  const subscribing = channels.map((wake) =>
    wake.hub.watch(wake.channel, merged.relay(wake.accept), lockName).then((live) => {
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

/** Several hubs' watches behind one latch: the hubs' own watchers never latch (the relay says no). */
class MergedWatch implements ChannelWatch {
  private readonly latch: MessageLatch = {
    accept: undefined,
    pending: false,
    message: undefined,
    wake: undefined,
  };
  private readonly parts: ChannelWatch[] = [];
  private closed = false;

  get lastMessage(): string | undefined {
    return this.latch.message;
  }

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
