/**
 * What the "Coming from…" rows observe in Redis: keys, TTLs, queued waiters, and whether a waiter is
 * still waiting. Events are ordered by state seen in Redis, never by sleeping.
 */
import assert from 'node:assert/strict';
import type { Clock } from '../../src/clock.js';
import type { RedisClient } from '../../src/index.js';
import { type Lease, LockTimeoutError, Mutex } from '../../src/index.js';
import type { RedisServer } from '../../tools/redis-server.js';
import type { TestClient } from '../fixtures/clients.js';
import { isClientRequestTimeout } from '../fixtures/helpers.js';
import { lockKeyIsFree } from '../fixtures/lock-value.js';

/** What a row's check gets: two clients (this process and "another process") and a spy client. */
export interface Env {
  /** The client the row's code uses. */
  readonly client: RedisClient;
  /** Another client, standing in for another process. */
  readonly other: RedisClient;
  /** Runs raw commands for assertions. */
  readonly admin: TestClient;
  /** The server, for its command statistics. */
  readonly server: RedisServer;
  /** A lock name no other row uses. */
  name(): string;
}

/** Polls `condition` (which may ask Redis) until it holds; fails with `what` after `timeoutMs`. */
export async function waitUntil(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  // A poll that hit its client's own request timeout observed nothing (fixtures/helpers.ts `until`).
  const holds = async () => {
    try {
      return await condition();
    } catch (error) {
      if (isClientRequestTimeout(error)) return false;
      throw error;
    }
  };
  while (!(await holds())) {
    if (performance.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A promise's outcome, readable without awaiting it (and never an unhandled rejection). */
export function track<T>(promise: Promise<T>): {
  readonly settled: () => boolean;
  readonly result: Promise<{ value: T } | { error: unknown }>;
} {
  let done = false;
  const result = promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  void result.finally(() => {
    done = true;
  });
  return { settled: () => done, result };
}

export async function pttl(env: Env, key: string): Promise<number> {
  return Number(await env.admin.command('PTTL', key));
}

/** Whether the lock key holds a holder (not gone, nor only the release a release leaves, 60 s). */
export async function held(env: Env, key: string): Promise<boolean> {
  return !(await lockKeyIsFree(env.admin, key));
}

/** The key a Mutex named `name` keeps its owner token in (default prefix). */
export function lockKey(name: string): string {
  return `locksmith:{${name}}`;
}

/**
 * The deadlines (server ms) of the waiters queued on a lock, oldest first: each entry's own, or its
 * latest renewal's (arrival-queue.lua's entry format; current deadlines in the waiting hash).
 */
export async function waiterDeadlines(env: Env, name: string): Promise<number[]> {
  const entries = ((await env.admin.command('LRANGE', `${lockKey(name)}:queue`, '0', '-1')) ??
    []) as string[];
  return Promise.all(
    entries.map(async (raw) => {
      // "<arrival>|<deadline>|<ttl>|<#channel>|<#label>|<channel><label><token>" (arrival-queue.lua)
      const [arrival, deadline, ttl, channelLength, labelLength] = raw.split('|');
      const head = `${arrival}|${deadline}|${ttl}|${channelLength}|${labelLength}|`;
      const token = raw.slice(head.length + Number(channelLength) + Number(labelLength));
      const renewed = await env.admin.command('HGET', `${lockKey(name)}:waiting`, token);
      return Math.max(Number(deadline), Number(renewed ?? 0));
    }),
  );
}

/**
 * Another process holds `name`, kept alive by its watchdog until the returned lease is released.
 * 1 s TTL: short enough that waiters wake (by the holder's PTTL) often, long enough that a loaded
 * machine does not delay the watchdog past it (with 300 ms the lock expired under a full test run,
 * and a waiter "waiting for ever" acquired).
 */
export function holdElsewhere(env: Env, name: string, ttlMs = 1_000): Promise<Lease> {
  return new Mutex(env.other, name, { ttlMs }).acquire();
}

/** A clock that can be moved forward by a day in an instant, as if the waiter had waited that long. */
function jumpableClock(): Clock & { jumpDays(days: number): void } {
  let offsetMs = 0;
  return {
    now: () => performance.now() + offsetMs,
    jumpDays(days) {
      offsetMs += days * 86_400_000;
    },
  };
}

/**
 * Checks that `wait(mutex)` waits for ever without waiting for ever: another process holds the lock,
 * the waiter's clock jumps a day ahead, and the waiter must still be waiting after two more attempts
 * (each renews its queue entry, whose deadline grows). A waiter with the default `timeoutMs`, on the
 * same clock, must give up meanwhile: the negative control that shows the jump is seen. Then the
 * holder releases and the waiter's lease is returned.
 */
export async function assertWaitsForever(env: Env, wait: (mutex: Mutex) => Promise<Lease>): Promise<Lease> {
  const name = env.name();
  // The holder's lease is long, so that no stall of this process's event loop (a loaded machine)
  // lets it lapse and hand the lock to a waiter the test expects to go on waiting. The waiters
  // still wake every second: a waiter wakes by the shortest lease TTL queued since the lock was
  // last free (it may be handed the lock and crash), and the control, queued first, asks for 1 s.
  const holder = await holdElsewhere(env, name, 30_000);
  const clock = jumpableClock();
  // Its own waiter in Redis, not in a batch of this process's callers (maxLocalHolds: 1).
  const control = track(new Mutex(env.client, name, { clock, maxLocalHolds: 1, ttlMs: 1_000 }).acquire());
  await waitUntil('the control is queued', async () => (await waiterDeadlines(env, name)).length === 1);
  const waiter = track(wait(new Mutex(env.client, name, { clock })));
  await waitUntil('both waiters are queued', async () => (await waiterDeadlines(env, name)).length === 2);
  clock.jumpDays(1);
  const controlOutcome = await control.result;
  assert.ok(
    'error' in controlOutcome && controlOutcome.error instanceof LockTimeoutError,
    `a waiter with the default timeoutMs gives up once a day has passed; got ${
      'error' in controlOutcome ? String(controlOutcome.error) : 'a lease'
    }`,
  );
  await waitUntil('the control left the queue', async () => (await waiterDeadlines(env, name)).length === 1);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const [before] = await waiterDeadlines(env, name);
    await waitUntil('the waiter tries again', async () => {
      assert.equal(waiter.settled(), false, 'the waiter gave up a day later');
      return ((await waiterDeadlines(env, name))[0] ?? 0) > (before ?? 0);
    });
  }
  assert.equal(waiter.settled(), false, 'still waiting a day later');
  assert.equal(await holder.release(), true);
  const outcome = await waiter.result;
  assert.ok(
    'value' in outcome,
    `acquired once released, got ${'error' in outcome ? String(outcome.error) : ''}`,
  );
  return outcome.value;
}

/** Waits until a lease that is not extended has expired in Redis by itself. */
export async function assertExpiresUnextended(env: Env, lease: Lease, ttlMs: number): Promise<void> {
  const key = lockKey(lease.name);
  const left = await pttl(env, key);
  assert.ok(left > 0 && left <= ttlMs, `PTTL ${left} within the ${ttlMs} ms lease`);
  await waitUntil('the lock expires by itself', async () => !(await held(env, key)), ttlMs + 5_000);
  assert.equal(lease.isHeld, false);
}
