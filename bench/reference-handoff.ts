/**
 * The speed-of-light line for a fair lock on one Redis: the smallest FIFO hand-off that works when
 * nothing goes wrong. NOT SAFE and not in the package: no fencing tokens, no validity, no dead-waiter
 * handling (a waiter that dies in the queue stalls every waiter behind it until its lease expires,
 * and a crashed holder's waiters wait for ever), no idempotent release, no lost-message recovery.
 * The benchmark runs it to show what Locksmith's safety machinery costs on top of a hand-off.
 *
 * acquire: one script, SET NX PX, else RPUSH our token; then wait for our token on this process's
 *          channel (one subscriber connection per process).
 * release: one script, LPOP the next token; SET the lock to it and PUBLISH it on its channel, or DEL.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { LockUnderTest } from './impls.js';

export const REFERENCE_ACQUIRE = `
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
redis.call('rpush', KEYS[2], ARGV[1] .. '|' .. ARGV[3])
return 0`;

const RELEASE = `
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local next = redis.call('lpop', KEYS[2])
if not next then redis.call('del', KEYS[1]) return 1 end
local token, channel = string.match(next, '^([^|]*)|(.*)$')
redis.call('set', KEYS[1], token, 'PX', ARGV[2])
redis.call('publish', channel, token)
return 1`;

/** One subscriber connection per process (per client), shared by every waiter of every key. */
const subscribers = new WeakMap<
  Redis,
  { channel: string; waiters: Map<string, () => void>; ready: Promise<unknown> }
>();

function subscriberFor(client: Redis) {
  let entry = subscribers.get(client);
  if (!entry) {
    const connection = client.duplicate();
    const waiters = new Map<string, () => void>();
    const channel = `reference:granted:${randomBytes(8).toString('hex')}`;
    connection.on('message', (_channel: string, token: string) => {
      waiters.get(token)?.();
      waiters.delete(token);
    });
    // The bench worker ends with process.exit(), which closes this connection too.
    entry = { channel, waiters, ready: connection.subscribe(channel) };
    subscribers.set(client, entry);
  }
  return entry;
}

export function referenceHandOff(client: Redis, key: string, ttlMs: number): LockUnderTest {
  const queue = `${key}:reference-queue`;
  const subscriber = subscriberFor(client);
  return {
    async acquire() {
      await subscriber.ready;
      const token = randomBytes(16).toString('hex');
      const granted = new Promise<void>((resolve) => subscriber.waiters.set(token, resolve));
      const now = await client.eval(
        REFERENCE_ACQUIRE,
        2,
        key,
        queue,
        token,
        String(ttlMs),
        subscriber.channel,
      );
      if (now === 1) subscriber.waiters.delete(token);
      else await granted;
      return () => client.eval(RELEASE, 2, key, queue, token, String(ttlMs));
    },
  };
}
