/**
 * The README's "Coming from…" table, row by row: what a user of another library wrote, the Locksmith
 * code that does the same, and a check that runs that code against a real Redis and asserts what the
 * row claims. The README shows each snippet's source text (table.ts extracts it from this file), so
 * the code in the table is the code that ran. Edit a row here, then regenerate the table:
 * `node --import tsx test/coming-from/write-readme.ts`.
 *
 * Snippets are arrow functions with an expression body that name their inputs after the other
 * library's variables (`duration`, `leaseTime`, ...); the check passes them in through `Vars`.
 */
import assert from 'node:assert/strict';
import type { RedisClient } from '../../src/index.js';
import {
  AlreadyAcquiredError,
  acquireFairSemaphore,
  acquireLockWithTimeout,
  acquireSemaphore,
  acquireSemaphoreWithLock,
  FairMutex,
  type Lease,
  type LockedWork,
  LockLostError,
  LockOwner,
  LockTimeoutError,
  MultiMutex,
  Mutex,
  ReadWriteLock,
  RedisExpLock,
  ReentrantMutex,
  refreshFairSemaphore,
  releaseFairSemaphore,
  releaseLock,
  releaseSemaphore,
  Semaphore,
  TooManyAttemptsError,
  WouldDeadlockError,
} from '../../src/index.js';
import { scriptCalls } from '../fixtures/commandstats.js';
import {
  assertExpiresUnextended,
  assertWaitsForever,
  type Env,
  held,
  holdElsewhere,
  lockKey,
  pttl,
  track,
  waiterDeadlines,
  waitUntil,
} from './probes.js';

/** Every name a snippet may use; a check passes only those its snippet needs (see `vars`). */
export interface Vars {
  client: RedisClient;
  redis: RedisClient;
  mutex: Mutex;
  reentrant: ReentrantMutex;
  rw: ReadWriteLock;
  lease: Lease;
  lock: RedisExpLock;
  key: string;
  lockname: string;
  resource: string;
  resources: string[];
  name: string;
  identifier: string;
  acquireTimeout: number | undefined;
  lockTimeout: number | undefined;
  expiry: number | null | undefined;
  retries: number | undefined;
  interval: number | undefined;
  duration: number;
  routine: LockedWork<unknown>;
  retryCount: number;
  retryDelay: number;
  retryJitter: number;
  driftFactor: number;
  acquireAttemptsLimit: number;
  refreshInterval: number;
  onLockLost: (error: unknown) => void;
  critical: (attempts: number) => unknown;
  waitTime: number;
  leaseTime: number;
  semname: string;
  limit: number;
  timeout: number;
  maxCount: number;
  ttl: number;
  retryAttempts: number;
  callback: () => unknown;
  semaphore: Semaphore;
  value: number;
  weight: number;
}

type Snippet = (vars: Vars) => unknown;

export interface Row<S extends Record<string, Snippet>> {
  /** The other library's side (Markdown). */
  readonly youUsed: string;
  /** Locksmith's side: each body is shown in the README as inline code. */
  readonly snippets: S;
  /** The README cell, given each snippet as Markdown inline code. */
  readonly inLocksmith: (code: { readonly [K in keyof S]: string }) => string;
  /** Runs the snippets against a real Redis and asserts what the cell claims. */
  readonly check: (snippets: S, env: Env) => Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: rows differ in their snippets; each row is typed where it is defined.
export type AnyRow = Row<any>;

function defineRow<S extends Record<string, Snippet>>(row: Row<S>): Row<S> {
  return row;
}

/**
 * The names a snippet gets. Reading any other name fails the check: a snippet that used a variable
 * its check did not mean to give it would otherwise run with `undefined`.
 */
function vars(given: Partial<Vars>): Vars {
  return new Proxy(given as Vars, {
    get(target, property) {
      if (typeof property === 'string' && !Object.hasOwn(target, property)) {
        assert.fail(`the snippet reads \`${property}\`, which its check does not provide`);
      }
      return Reflect.get(target, property);
    },
  });
}

async function elapsedMs<T>(run: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await run();
  return [result, performance.now() - started];
}

async function rejectsWith(promise: Promise<unknown>, kind: abstract new (...args: never[]) => Error) {
  const outcome = await track(promise).result;
  assert.ok('error' in outcome, `expected a ${kind.name}, got a result`);
  assert.ok(outcome.error instanceof kind, `expected a ${kind.name}, got ${String(outcome.error)}`);
  return outcome.error as InstanceType<typeof kind>;
}

// biome-ignore format: snippet bodies are shown verbatim in the README; each stays on one line.
const definedRows = [
  defineRow({
    youUsed: '**Redis in Action** `acquire_lock_with_timeout(conn, lockname, acquire_timeout=10, lock_timeout=10)` (listings 6.11 and 11.5)',
    snippets: {
      acquire: ({ client, lockname, acquireTimeout, lockTimeout }) => acquireLockWithTimeout(client, lockname, acquireTimeout, lockTimeout),
    },
    inLocksmith: (c) =>
      `${c.acquire}: seconds and defaults (10, 10) as in the book, \`lock_timeout\` rounded up; resolves with the token or \`false\`. A waiter sleeps until the release instead of retrying every millisecond.`,
    async check(s, env) {
      const lockname = env.name();
      const token = await s.acquire(vars({ client: env.client, lockname, acquireTimeout: undefined, lockTimeout: undefined }));
      assert.equal(typeof token, 'string');
      const left = await pttl(env, lockKey(lockname));
      assert.ok(left > 9_000 && left <= 10_000, `default lock_timeout of 10 s, PTTL ${left}`);
      const [busy, waitedMs] = await elapsedMs(async () => s.acquire(vars({ client: env.other, lockname, acquireTimeout: 0.2, lockTimeout: 1.5 })));
      assert.equal(busy, false, 'false once acquire_timeout ran out');
      assert.ok(waitedMs >= 190, `waited ${waitedMs} ms of 200`);
      // A waiter that is woken by the release: its attempts are counted in Redis' own statistics.
      const before = await scriptCalls(env.server);
      const waiter = track(s.acquire(vars({ client: env.other, lockname, acquireTimeout: 10, lockTimeout: 1.5 })));
      await waitUntil('the waiter is queued', async () => (await waiterDeadlines(env, lockname)).length === 1);
      await new Promise((resolve) => setTimeout(resolve, 200)); // time in which the book's loop would spin
      assert.equal(await releaseLock(env.client, lockname, token as string), true);
      const outcome = await waiter.result;
      assert.ok('value' in outcome && typeof outcome.value === 'string', 'the waiter got the lock');
      const calls = (await scriptCalls(env.server)) - before;
      assert.ok(calls <= 6, `${calls} script calls while waiting 200 ms: no busy retrying`);
      const rounded = await pttl(env, lockKey(lockname));
      assert.ok(rounded > 1_500 && rounded <= 2_000, `lock_timeout 1.5 s rounds up to 2 s, PTTL ${rounded}`);
    },
  }),
  defineRow({
    youUsed: 'Redis in Action `release_lock(conn, lockname, identifier)`',
    snippets: { release: ({ client, lockname, identifier }) => releaseLock(client, lockname, identifier) },
    inLocksmith: (c) => `${c.release} → \`true\` if \`identifier\` held the lock (compare-and-delete, as listing 11.6)`,
    async check(s, env) {
      const lockname = env.name();
      const identifier = (await acquireLockWithTimeout(env.client, lockname, 1, 10)) as string;
      assert.equal(await s.release(vars({ client: env.client, lockname, identifier: 'someone-else' })), false);
      assert.equal(await held(env, lockKey(lockname)), true, 'a wrong identifier deletes nothing');
      assert.equal(await s.release(vars({ client: env.client, lockname, identifier })), true);
      assert.equal(await held(env, lockKey(lockname)), false);
    },
  }),
  defineRow({
    youUsed: 'Redis in Action `acquire_semaphore(conn, semname, limit, timeout=10)` / `acquire_fair_semaphore(…)` / `acquire_semaphore_with_lock(…)` (6.3)',
    snippets: {
      basic: ({ client, semname, limit, timeout }) => acquireSemaphore(client, semname, limit, timeout * 1000),
      fair: ({ client, semname, limit, timeout }) => acquireFairSemaphore(client, semname, limit, timeout * 1000),
      withLock: ({ client, semname, limit, timeout }) => acquireSemaphoreWithLock(client, semname, limit, timeout * 1000),
    },
    inLocksmith: (c) =>
      `${c.basic} / ${c.fair} / ${c.withLock}: the identifier or \`null\`, one attempt, as in the book (\`timeoutMs\` in ms, default 10 s). All three are one fair script on the server's clock: a fast client clock steals no permit (6.3.1), and no lock is needed around it (6.3.4). To wait in line: \`Semaphore\`.`,
    async check(s, env) {
      for (const acquire of [s.basic, s.fair, s.withLock]) {
        const semname = env.name();
        const given = (client: RedisClient) => acquire(vars({ client, semname, limit: 2, timeout: 10 })) as Promise<string | null>;
        const first = await given(env.client);
        assert.equal(typeof first, 'string');
        assert.equal(typeof (await given(env.other)), 'string');
        const [third, tookMs] = await elapsedMs(() => given(env.other));
        assert.equal(third, null, 'None when every permit is held');
        assert.ok(tookMs < 1_000, `one attempt, no waiting (${tookMs} ms)`);
        const left = await pttl(env, lockKey(semname));
        assert.ok(left > 9_000 && left <= 10_000, `timeout=10 s, PTTL ${left}`);
      }
    },
  }),
  defineRow({
    youUsed: 'Redis in Action `release_semaphore(conn, semname, identifier)` / `release_fair_semaphore(…)`',
    snippets: {
      release: ({ client, semname, identifier }) => releaseSemaphore(client, semname, identifier),
      fair: ({ client, semname, identifier }) => releaseFairSemaphore(client, semname, identifier),
    },
    inLocksmith: (c) => `${c.release} / ${c.fair} → \`true\` if \`identifier\` held a permit, \`false\` if it had timed out`,
    async check(s, env) {
      for (const release of [s.release, s.fair]) {
        const semname = env.name();
        const identifier = (await acquireSemaphore(env.client, semname, 1)) as string;
        assert.equal(await release(vars({ client: env.client, semname, identifier: 'someone-else' })), false);
        assert.equal(await release(vars({ client: env.client, semname, identifier })), true);
        assert.equal(await held(env, lockKey(semname)), false, 'the permit is free');
      }
    },
  }),
  defineRow({
    youUsed: 'Redis in Action `refresh_fair_semaphore(conn, semname, identifier)`',
    snippets: { refresh: ({ client, semname, identifier, timeout }) => refreshFairSemaphore(client, semname, identifier, timeout * 1000) },
    inLocksmith: (c) => `${c.refresh} → \`true\` while \`identifier\` holds its permit (now for \`timeoutMs\` more), \`false\` once it timed out. A \`Semaphore\` lease refreshes itself (auto-extension).`,
    async check(s, env) {
      const semname = env.name();
      const identifier = (await acquireSemaphore(env.client, semname, 1, 10_000)) as string;
      assert.equal(await s.refresh(vars({ client: env.client, semname, identifier, timeout: 30 })), true);
      const left = await pttl(env, lockKey(semname));
      assert.ok(left > 29_000 && left <= 30_000, `refreshed to 30 s, PTTL ${left}`);
      assert.equal(await s.refresh(vars({ client: env.client, semname, identifier, timeout: 0.1 })), true);
      const permitsHeld = async () => (await new Semaphore(env.other, semname, { limit: 1 }).inspect()).permitsHeld;
      await waitUntil('the permit timed out', async () => (await permitsHeld()) === 0);
      assert.equal(await s.refresh(vars({ client: env.client, semname, identifier, timeout: 10 })), false);
    },
  }),
  defineRow({
    youUsed: '**redis-semaphore** `new Semaphore(client, key, maxCount, { lockTimeout, acquireTimeout })`',
    snippets: {
      create: ({ client, key, maxCount, lockTimeout, acquireTimeout }) => new Semaphore(client, key, { limit: maxCount, ttlMs: lockTimeout, timeoutMs: acquireTimeout }),
    },
    inLocksmith: (c) =>
      `${c.create}: permits handed over in arrival order (no polling), holders expiring by the server's clock. \`MultiSemaphore\`: \`acquire({ permits })\`.`,
    async check(s, env) {
      const key = env.name();
      const make = (client: RedisClient) => s.create(vars({ client, key, maxCount: 2, lockTimeout: 10_000, acquireTimeout: 200 })) as Semaphore;
      const semaphore = make(env.client);
      const leases = [await semaphore.acquire(), await make(env.other).acquire()];
      const left = await pttl(env, lockKey(key));
      assert.ok(left > 9_000 && left <= 10_000, `lockTimeout is the TTL, PTTL ${left}`);
      const [, waitedMs] = await elapsedMs(() => rejectsWith(make(env.other).acquire(), LockTimeoutError));
      assert.ok(waitedMs >= 190, `acquireTimeout is the wait, waited ${waitedMs} ms`);
      await Promise.all(leases.map((lease) => lease.release()));
      const both = await semaphore.acquire({ permits: 2 });
      assert.equal((await semaphore.inspect()).permitsHeld, 2);
      await both.release();
    },
  }),
  defineRow({
    youUsed: '**redis_exp_lock** `RedisExpLock.new(key, redis:, expiry:, retries:, interval:)`',
    snippets: { create: ({ key, redis, expiry, retries, interval }) => new RedisExpLock(key, { redis, expiry, retries, interval }) },
    inLocksmith: (c) =>
      `${c.create}: same units (seconds) and defaults (60, 0, 0.01). \`expiry: null\` gets a 30 s TTL that the watchdog renews while held, so a crashed holder does not block the key for ever.`,
    async check(s, env) {
      const key = env.name();
      const make = (client: RedisClient, options: Partial<Vars>) =>
        s.create(vars({ key, redis: client, expiry: undefined, retries: undefined, interval: undefined, ...options }));
      const byDefault = make(env.client, {});
      await byDefault.lock();
      const left = await pttl(env, lockKey(key));
      assert.ok(left > 59_000 && left <= 60_000, `default expiry of 60 s, PTTL ${left}`);
      const [error, waitedMs] = await elapsedMs(() => rejectsWith(make(env.other, {}).lock(), TooManyAttemptsError));
      assert.equal((error as TooManyAttemptsError).attempts, 1, 'default retries: 0');
      assert.ok(waitedMs < 1_000, `no waiting without retries (${waitedMs} ms)`);
      const [paced, pacedMs] = await elapsedMs(() => rejectsWith(make(env.other, { retries: 2, interval: 0.1 }).lock(), TooManyAttemptsError));
      assert.equal((paced as TooManyAttemptsError).attempts, 3, 'retries: 2 is three attempts');
      assert.ok(pacedMs >= 190, `interval in seconds: 2 × 0.1 s, waited ${pacedMs} ms`);
      const [, defaultPaceMs] = await elapsedMs(() => rejectsWith(make(env.other, { retries: 3 }).lock(), TooManyAttemptsError));
      assert.ok(defaultPaceMs >= 25, `default interval of 0.01 s: 3 pauses took ${defaultPaceMs} ms`);
      await byDefault.unlock();
      await make(env.client, { expiry: 2 }).lock();
      assert.ok((await pttl(env, lockKey(key))) <= 2_000, 'expiry in seconds');
      await env.admin.command('DEL', lockKey(key));
      const forever = make(env.client, { expiry: null });
      await forever.lock();
      const watched = await pttl(env, lockKey(key));
      assert.ok(watched > 29_000 && watched <= 30_000, `expiry: null still expires after a crash (PTTL ${watched})`);
      assert.equal(await forever.unlock(), true);
    },
  }),
  defineRow({
    youUsed: '`#locked?` / `#key_locked?` / `#key_owned?`',
    snippets: { locked: ({ lock }) => lock.locked(), keyLocked: ({ lock }) => lock.keyLocked(), keyOwned: ({ lock }) => lock.keyOwned() },
    inLocksmith: (c) =>
      `${c.locked} (local, as in the gem: true from a lock until \`unlock()\`, also after the key expired) / ${c.keyLocked} / ${c.keyOwned} (ask Redis)`,
    async check(s, env) {
      const key = env.name();
      const mine = new RedisExpLock(key, { redis: env.client });
      const theirs = new RedisExpLock(key, { redis: env.other });
      const state = async (lock: RedisExpLock) => [s.locked(vars({ lock })), await s.keyLocked(vars({ lock })), await s.keyOwned(vars({ lock }))];
      assert.deepEqual(await state(mine), [false, false, false]);
      await mine.lock();
      assert.deepEqual(await state(mine), [true, true, true]);
      assert.deepEqual(await state(theirs), [false, true, false]);
      await env.admin.command('DEL', lockKey(key));
      assert.deepEqual(await state(mine), [true, false, false], 'locked() does not ask Redis');
    },
  }),
  defineRow({
    youUsed: '`#try_lock` / `#lock` / `#unlock`',
    snippets: { tryLock: ({ lock }) => lock.tryLock(), lock: ({ lock }) => lock.lock(), unlock: ({ lock }) => lock.unlock() },
    inLocksmith: (c) =>
      `${c.tryLock} → \`boolean\` / ${c.lock} → number of attempts / ${c.unlock} → \`false\` if never locked or expired; locking twice throws \`AlreadyAcquiredError\``,
    async check(s, env) {
      const key = env.name();
      const lock = new RedisExpLock(key, { redis: env.client, expiry: 0.3 });
      const other = new RedisExpLock(key, { redis: env.other, retries: 100 });
      assert.equal(await s.unlock(vars({ lock })), false, 'never locked');
      assert.equal(await s.tryLock(vars({ lock })), true);
      assert.equal(await s.tryLock(vars({ lock: new RedisExpLock(key, { redis: env.other }) })), false);
      await rejectsWith(s.lock(vars({ lock })), AlreadyAcquiredError);
      assert.equal(await s.unlock(vars({ lock })), true);
      assert.equal(await s.lock(vars({ lock })), 1, 'one attempt on a free key');
      // `other` retries every 10 ms (the default interval) until the 0.3 s expiry frees the key.
      const outcome = await track(s.lock(vars({ lock: other }))).result;
      assert.ok('value' in outcome && (outcome.value as number) >= 2, 'attempts counted while waiting');
      assert.equal(await s.unlock(vars({ lock })), false, 'expired before the unlock');
      await other.unlock();
    },
  }),
  defineRow({
    youUsed: '`#synchronize { \\|attempts\\| … }`',
    snippets: { synchronize: ({ lock, critical }) => lock.synchronize((attempts) => critical(attempts)) },
    inLocksmith: (c) =>
      `${c.synchronize}: resolves with the block's result and unlocks in \`finally\` (the gem leaves the lock held when the block raises)`,
    async check(s, env) {
      const key = env.name();
      const lock = new RedisExpLock(key, { redis: env.client });
      const seen: unknown[] = [];
      const critical = async (attempts: number) => {
        seen.push(attempts, await held(env, lockKey(key)));
        return 'done';
      };
      assert.equal(await s.synchronize(vars({ lock, critical })), 'done');
      assert.deepEqual(seen, [1, true], 'the block ran holding the lock, with the attempt count');
      assert.equal(await held(env, lockKey(key)), false, 'unlocked afterwards');
      const failing = () => Promise.reject(new Error('boom'));
      await assert.rejects(s.synchronize(vars({ lock, critical: failing })) as Promise<unknown>, /boom/);
      assert.equal(await held(env, lockKey(key)), false, 'unlocked after a throw too');
    },
  }),
  defineRow({
    youUsed: '`AlreadyAcquiredLockError` / `TooManyLockAttemptsError`',
    snippets: { already: () => AlreadyAcquiredError, tooMany: () => TooManyAttemptsError },
    inLocksmith: (c) => `${c.already} / ${c.tooMany}`,
    async check(s, env) {
      const key = env.name();
      const lock = new RedisExpLock(key, { redis: env.client });
      await lock.lock();
      await rejectsWith(lock.lock(), s.already());
      await rejectsWith(new RedisExpLock(key, { redis: env.other, retries: 1 }).lock(), s.tooMany());
      await lock.unlock();
    },
  }),
  defineRow({
    youUsed: '**node-redlock** `redlock.acquire([resource], duration)`',
    snippets: { acquire: ({ mutex, duration }) => mutex.acquire({ ttlMs: duration, autoExtend: false, retries: 10, retryDelayMs: 100, retryJitterMs: 200 }) },
    inLocksmith: (c) =>
      `${c.acquire}: not extended, with node-redlock's defaults: 11 attempts, 200 ± 100 ms apart (Locksmith's jitter only adds: 100 + 0..200 ms), then \`TooManyAttemptsError\`. Without the retry options the release hands the lock to a waiter, which waits up to \`timeoutMs\` (10 s). Across servers: \`new RedlockMutex([a, b, c], resource, …)\`.`,
    async check(s, env) {
      const resource = env.name();
      const mutex = new Mutex(env.client, resource);
      const holder = await new Mutex(env.other, resource, { ttlMs: 60_000, autoExtend: false }).acquire();
      const [error, waitedMs] = await elapsedMs(() => rejectsWith(s.acquire(vars({ mutex, duration: 300 })) as Promise<Lease>, TooManyAttemptsError));
      assert.equal((error as TooManyAttemptsError).attempts, 11);
      // 10 pauses of 100 + 0..200 ms: about 2 s. Without the jitter they would take 1 s; the sum of
      // 10 uniform jitters falls below 300 ms with a probability under 1e-4.
      assert.ok(waitedMs >= 1_300, `10 pauses of 100 + 0..200 ms, waited ${waitedMs} ms`);
      await holder.release();
      const lease = (await s.acquire(vars({ mutex, duration: 300 }))) as Lease;
      await assertExpiresUnextended(env, lease, 300);
    },
  }),
  defineRow({
    youUsed: 'node-redlock `redlock.acquire([a, b, c], duration)` (several resources at once)',
    snippets: { acquire: ({ client, resources, duration }) => new MultiMutex(client, resources).acquire({ ttlMs: duration }) },
    inLocksmith: (c) =>
      `${c.acquire}: every resource or none, one script per attempt (on a cluster the names share a hash tag); a waiter holds none of them and is woken by a release instead of retrying. \`lease.fencingTokens\` has each resource's token.`,
    async check(s, env) {
      const resources = [env.name(), env.name(), env.name()];
      const holder = await new Mutex(env.other, resources[1] as string, { ttlMs: 60_000 }).acquire();
      const waiting = track(s.acquire(vars({ client: env.client, resources, duration: 5_000 })) as Promise<Lease>);
      const registered = async () => Number(await env.admin.command('HLEN', `${lockKey(resources[1] as string)}:multi-waiting`));
      await waitUntil('the waiter waits for the held resource', async () => (await registered()) === 1);
      assert.equal(await held(env, lockKey(resources[0] as string)), false, 'it holds none while it waits');
      await holder.release();
      const outcome = await waiting.result;
      assert.ok('value' in outcome, 'woken by the release');
      for (const r of resources) assert.equal(await held(env, lockKey(r)), true);
      assert.deepEqual(Object.keys(outcome.value.fencingTokens), resources);
      assert.ok((outcome.value.fencingTokens[resources[1] as string] as number) > holder.fencingToken);
      await outcome.value.release();
      for (const r of resources) assert.equal(await held(env, lockKey(r)), false);
    },
  }),
  defineRow({
    youUsed: 'node-redlock `lock.release()` / `lock.extend(duration)`',
    snippets: { release: ({ lease }) => lease.release(), extend: ({ lease, duration }) => lease.extend(duration) },
    inLocksmith: (c) =>
      `${c.release} / ${c.extend}: the same lease, extended in place. Releasing a lock that expired resolves \`false\` instead of throwing.`,
    async check(s, env) {
      const name = env.name();
      const lease = await new Mutex(env.client, name, { ttlMs: 1_000, autoExtend: false }).acquire();
      await s.extend(vars({ lease, duration: 20_000 }));
      assert.ok((await pttl(env, lockKey(name))) > 10_000, 'extended to the new duration');
      assert.equal(lease.ttlMs, 20_000);
      assert.equal(await s.release(vars({ lease })), true);
      assert.equal(await held(env, lockKey(name)), false);
      const expired = await new Mutex(env.client, name, { ttlMs: 1_000, autoExtend: false }).acquire();
      await waitUntil('the lease expires', async () => !(await held(env, lockKey(name))));
      assert.equal(await s.release(vars({ lease: expired })), false, 'an expired lock: false, not an error');
    },
  }),
  defineRow({
    youUsed: 'node-redlock `redlock.using([resource], duration, async (signal) => …)`',
    snippets: { using: ({ mutex, routine, duration }) => mutex.using(routine, { ttlMs: duration }) },
    inLocksmith: (c) =>
      `${c.using}: \`routine(signal, lease)\` runs while the watchdog extends the lock; \`signal.reason\` is a \`LockLostError\` where node-redlock has \`signal.error\``,
    async check(s, env) {
      const resource = env.name();
      const mutex = new Mutex(env.client, resource);
      const key = lockKey(resource);
      const routine: LockedWork<unknown> = async (signal, lease) => {
        assert.equal(await held(env, key), true);
        // PTTL only falls between two readings unless the lock was extended in between.
        let last = await pttl(env, key);
        await waitUntil('the watchdog extends the lock', async () => {
          const [previous, now] = [last, await pttl(env, key)];
          last = now;
          return now > previous;
        });
        await env.admin.command('DEL', key); // the lock is lost behind the holder's back
        await waitUntil('the signal aborts', () => signal.aborted);
        assert.ok(signal.reason instanceof LockLostError);
        return lease.fencingToken;
      };
      assert.equal(typeof (await s.using(vars({ mutex, routine, duration: 300 }))), 'number');
    },
  }),
  defineRow({
    youUsed: 'node-redlock settings `{ retryCount, retryDelay, retryJitter, driftFactor }`',
    snippets: {
      create: ({ client, resource, retryCount, retryDelay, retryJitter, driftFactor }) => new Mutex(client, resource, { retries: retryCount, retryDelayMs: retryDelay - retryJitter, retryJitterMs: 2 * retryJitter, driftFactor }),
    },
    inLocksmith: (c) =>
      `${c.create}: the same pauses (node-redlock waits \`retryDelay\` ± \`retryJitter\`, Locksmith \`retryDelayMs\` + 0..\`retryJitterMs\`), for \`retryJitter\` ≤ \`retryDelay\`. \`retryCount: -1\` is \`retries: Infinity\`. Usually unneeded: a release wakes a waiter. The watchdog extends at about \`ttlMs\`/3.`,
    async check(s, env) {
      const resource = env.name();
      const settings = { client: env.client, resource, retryCount: 2, retryDelay: 200, retryJitter: 100, driftFactor: 0.01 };
      const mutex = s.create(vars(settings)) as Mutex;
      assert.deepEqual([mutex.options.retryDelayMs, mutex.options.retryJitterMs], [100, 200], 'pauses of 100 + 0..200 ms');
      const holder = await holdElsewhere(env, resource);
      const [error, waitedMs] = await elapsedMs(() => rejectsWith(mutex.acquire(), TooManyAttemptsError));
      assert.equal((error as TooManyAttemptsError).attempts, 3);
      assert.ok(waitedMs >= 190, `2 pauses of at least 100 ms, waited ${waitedMs} ms`);
      await holder.release();
      const forever = s.create(vars({ ...settings, retryCount: Number.POSITIVE_INFINITY })) as Mutex;
      assert.equal(forever.options.retries, Number.POSITIVE_INFINITY);
      assert.throws(() => s.create(vars({ ...settings, retryCount: -1 })), RangeError, '-1 is refused, not read as "for ever"');
    },
  }),
  defineRow({
    youUsed: 'node-redlock `ExecutionError` (from `acquire`) / `ExecutionError` (from `extend`) / `ResourceLockedError`',
    snippets: { acquireFailed: () => TooManyAttemptsError, extendFailed: () => LockLostError },
    inLocksmith: (c) =>
      `${c.acquireFailed} (or \`LockTimeoutError\` when \`timeoutMs\` ran out first) / ${c.extendFailed}; a held lock is not an error per attempt, so nothing maps \`ResourceLockedError\``,
    async check(s, env) {
      const name = env.name();
      const lease = await new Mutex(env.other, name, { ttlMs: 5_000, autoExtend: false }).acquire();
      await rejectsWith(new Mutex(env.client, name, { retries: 1, retryDelayMs: 10 }).acquire(), s.acquireFailed());
      await env.admin.command('DEL', lockKey(name));
      await rejectsWith(lease.extend(), s.extendFailed());
    },
  }),
  defineRow({
    youUsed: '**redlock-universal** `createLock({ adapter, key, ttl, retryAttempts, retryDelay })`',
    snippets: {
      create: ({ client, key, ttl, retryAttempts, retryDelay }) => new Mutex(client, key, { ttlMs: ttl, retries: retryAttempts, retryDelayMs: retryDelay }),
    },
    inLocksmith: (c) =>
      `${c.create}: the client, no adapter. Its defaults (30 s, 3, 100 ms): 4 attempts 100 ms apart, then \`TooManyAttemptsError\` (\`LockAcquisitionError\`); without the retry options the release wakes a waiter. \`createRedlock({ adapters, … })\`: \`new RedlockMutex(clients, key, …)\`.`,
    async check(s, env) {
      const key = env.name();
      const defaults = { client: env.client, key, ttl: 30_000, retryAttempts: 3, retryDelay: 100 };
      const holder = await holdElsewhere(env, key);
      const mutex = s.create(vars(defaults)) as Mutex;
      const [error, waitedMs] = await elapsedMs(() => rejectsWith(mutex.acquire(), TooManyAttemptsError));
      assert.equal((error as TooManyAttemptsError).attempts, 4, 'retryAttempts: 3 is four attempts');
      assert.ok(waitedMs >= 290, `3 pauses of 100 ms, waited ${waitedMs} ms`);
      await holder.release();
      const lease = await mutex.acquire();
      const left = await pttl(env, lockKey(key));
      assert.ok(left > 29_000 && left <= 30_000, `ttl is the TTL, PTTL ${left}`);
      await lease.release();
    },
  }),
  defineRow({
    youUsed: 'redlock-universal `lock.acquire()` / `lock.release(handle)` / `lock.extend(handle, ttl)` / `lock.using(routine)` / `lock.isLocked(key)`',
    snippets: {
      acquire: ({ mutex }) => mutex.acquire(),
      release: ({ lease }) => lease.release(),
      extend: ({ lease, ttl }) => lease.extend(ttl),
      using: ({ mutex, routine }) => mutex.using(routine),
      isLocked: ({ mutex }) => mutex.isLocked(),
    },
    inLocksmith: (c) =>
      `${c.acquire} → the lease (your handle) / ${c.release} / ${c.extend} / ${c.using} / ${c.isLocked}. The watchdog extends a lease outside \`using()\` too; \`extend()\` of a lost lock throws \`LockLostError\` (redlock-universal: \`false\`).`,
    async check(s, env) {
      const name = env.name();
      const mutex = new Mutex(env.client, name);
      assert.equal(await s.isLocked(vars({ mutex })), false);
      const lease = (await s.acquire(vars({ mutex }))) as Lease;
      assert.equal(await s.isLocked(vars({ mutex })), true);
      await s.extend(vars({ lease, ttl: 60_000 }));
      assert.ok((await pttl(env, lockKey(name))) > 50_000, 'extended to the new ttl');
      assert.equal(await s.release(vars({ lease })), true);
      assert.equal(await s.isLocked(vars({ mutex })), false);
      const routine: LockedWork<unknown> = async (signal, held) => [signal.aborted, await held.isOwned()];
      assert.deepEqual(await s.using(vars({ mutex, routine })), [false, true], 'the routine runs holding the lock');
      assert.equal(await s.isLocked(vars({ mutex })), false, 'released after the routine');
      const lost = (await s.acquire(vars({ mutex }))) as Lease;
      await env.admin.command('DEL', lockKey(name));
      await rejectsWith(s.extend(vars({ lease: lost, ttl: 1_000 })) as Promise<unknown>, LockLostError);
    },
  }),
  defineRow({
    youUsed: '**redis-semaphore** `new Mutex(client, key, { lockTimeout, acquireTimeout, acquireAttemptsLimit, refreshInterval })`',
    snippets: {
      create: ({ client, key, lockTimeout, acquireTimeout, acquireAttemptsLimit, refreshInterval }) => new Mutex(client, key, { ttlMs: lockTimeout, timeoutMs: acquireTimeout, retries: acquireAttemptsLimit - 1, autoExtend: refreshInterval > 0 }),
    },
    inLocksmith: (c) =>
      `${c.create}. The watchdog extends at about \`ttlMs\`/3 rather than every \`refreshInterval\`; \`retryInterval\` is \`retryDelayMs\` (usually unneeded: a release wakes a waiter).`,
    async check(s, env) {
      const key = env.name();
      // redis-semaphore's defaults: 10 s, 10 s, no attempt limit, refresh every 8 s.
      const defaults = { client: env.client, key, lockTimeout: 10_000, acquireTimeout: 10_000, acquireAttemptsLimit: Number.POSITIVE_INFINITY, refreshInterval: 8_000 };
      const mutex = s.create(vars(defaults)) as Mutex;
      assert.deepEqual(
        [mutex.options.ttlMs, mutex.options.timeoutMs, mutex.options.retries, mutex.options.autoExtend],
        [10_000, 10_000, Number.POSITIVE_INFINITY, true],
      );
      const lease = await mutex.acquire();
      const left = await pttl(env, lockKey(key));
      assert.ok(left > 9_000 && left <= 10_000, `lockTimeout is the TTL, PTTL ${left}`);
      const [, waitedMs] = await elapsedMs(() => rejectsWith((s.create(vars({ ...defaults, client: env.other, acquireTimeout: 200 })) as Mutex).acquire(), LockTimeoutError));
      assert.ok(waitedMs >= 190, `acquireTimeout is the wait, waited ${waitedMs} ms`);
      const limited = s.create(vars({ ...defaults, client: env.other, acquireAttemptsLimit: 2 })) as Mutex;
      const error = await rejectsWith(limited.acquire({ retryDelayMs: 10 }), TooManyAttemptsError);
      assert.equal((error as TooManyAttemptsError).attempts, 2, 'acquireAttemptsLimit: 2 is two attempts');
      await lease.release();
      const fixed = s.create(vars({ ...defaults, lockTimeout: 300, refreshInterval: 0 })) as Mutex;
      await assertExpiresUnextended(env, await fixed.acquire(), 300);
    },
  }),
  defineRow({
    youUsed: 'redis-semaphore `onLockLost: (error) => …`',
    snippets: { listen: ({ lease, onLockLost }) => lease.signal.addEventListener('abort', () => onLockLost(lease.signal.reason)) },
    inLocksmith: (c) => `${c.listen}: the reason is a \`LockLostError\`; a lost lock never throws from a timer`,
    async check(s, env) {
      const name = env.name();
      const lease = await new Mutex(env.client, name, { ttlMs: 300 }).acquire();
      const lost: unknown[] = [];
      s.listen(vars({ lease, onLockLost: (error) => lost.push(error) }));
      await env.admin.command('DEL', lockKey(name));
      await waitUntil('onLockLost is called', () => lost.length > 0);
      assert.ok(lost[0] instanceof LockLostError);
    },
  }),
  defineRow({
    youUsed: 'redis-semaphore `mutex.acquire()` / `mutex.tryAcquire()` / `mutex.release()` / `mutex.isAcquired`',
    snippets: {
      acquire: ({ mutex }) => mutex.acquire(),
      tryAcquire: ({ mutex }) => mutex.acquire().catch((error) => (error instanceof LockTimeoutError ? null : Promise.reject(error))),
      release: ({ lease }) => lease.release(),
      isAcquired: ({ lease }) => lease.isHeld,
    },
    inLocksmith: (c) =>
      `${c.acquire} → lease / ${c.tryAcquire} (redis-semaphore's \`tryAcquire\` waits up to \`acquireTimeout\` too; \`mutex.tryAcquire()\` makes one attempt) / ${c.release} / ${c.isAcquired}`,
    async check(s, env) {
      const key = env.name();
      const mutex = new Mutex(env.client, key, { timeoutMs: 300 });
      const lease = (await s.acquire(vars({ mutex }))) as Lease;
      assert.equal(s.isAcquired(vars({ lease })), true);
      const waiting = new Mutex(env.other, key, { timeoutMs: 300 });
      const [busy, waitedMs] = await elapsedMs(async () => s.tryAcquire(vars({ mutex: waiting })));
      assert.equal(busy, null, 'null, not an error, when the wait runs out');
      assert.ok(waitedMs >= 290, `it waited (${waitedMs} ms of 300)`);
      const later = track(s.tryAcquire(vars({ mutex: new Mutex(env.other, key, { timeoutMs: 5_000 }) })) as Promise<Lease | null>);
      await waitUntil('a waiter is queued', async () => (await waiterDeadlines(env, key)).length === 1);
      assert.equal(await s.release(vars({ lease })), true);
      assert.equal(s.isAcquired(vars({ lease })), false);
      const outcome = await later.result;
      assert.ok('value' in outcome && outcome.value !== null, 'a lease once released within the wait');
      await outcome.value.release();
    },
  }),
  defineRow({
    youUsed: 'redis-semaphore `LostLockError` / `TimeoutError`',
    snippets: { lost: () => LockLostError, timeout: () => LockTimeoutError, attempts: () => TooManyAttemptsError },
    inLocksmith: (c) =>
      `${c.lost} / ${c.timeout}, or ${c.attempts} when \`retries\` (\`acquireAttemptsLimit\`) ran out`,
    async check(s, env) {
      const name = env.name();
      const lease = await new Mutex(env.client, name, { ttlMs: 300 }).acquire();
      await rejectsWith(new Mutex(env.other, name, { timeoutMs: 50 }).acquire(), s.timeout());
      await rejectsWith(new Mutex(env.other, name, { retries: 0 }).acquire(), s.attempts());
      await env.admin.command('DEL', lockKey(name));
      await waitUntil('the lease learns it is lost', () => lease.signal.aborted);
      assert.ok(lease.signal.reason instanceof s.lost());
    },
  }),
  defineRow({
    youUsed: '**Redisson** `RLock.lock()`',
    snippets: { lock: ({ mutex }) => mutex.acquire({ timeoutMs: Infinity }) },
    inLocksmith: (c) =>
      `${c.lock}: waits for ever; the watchdog (\`autoExtend\`) and a 30 s TTL (Redisson's \`lockWatchdogTimeout\`) are the defaults`,
    async check(s, env) {
      const lease = await assertWaitsForever(env, (mutex) => s.lock(vars({ mutex })));
      assert.equal(lease.ttlMs, 30_000);
      const left = await pttl(env, lockKey(lease.name));
      assert.ok(left > 29_000 && left <= 30_000, `PTTL ${left}`);
      await lease.release();
      assert.equal(new Mutex(env.client, 'x').options.autoExtend, true);
    },
  }),
  defineRow({
    youUsed: 'Redisson `lock(leaseTime, unit)`',
    snippets: { lock: ({ mutex, leaseTime }) => mutex.acquire({ timeoutMs: Infinity, ttlMs: leaseTime, autoExtend: false }) },
    inLocksmith: (c) => `${c.lock}: waits for ever, then holds for \`leaseTime\` ms, not extended`,
    async check(s, env) {
      const lease = await assertWaitsForever(env, (mutex) => s.lock(vars({ mutex, leaseTime: 300 })));
      await assertExpiresUnextended(env, lease, 300);
    },
  }),
  defineRow({
    youUsed: 'Redisson `tryLock()`',
    snippets: { tryLock: ({ mutex }) => mutex.tryAcquire() },
    inLocksmith: (c) => `${c.tryLock}: one attempt; a lease (watchdog on) or \`null\``,
    async check(s, env) {
      const name = env.name();
      const lease = await s.tryLock(vars({ mutex: new Mutex(env.client, name) }));
      assert.ok(lease);
      assert.ok((await pttl(env, lockKey(name))) > 29_000);
      assert.equal(await s.tryLock(vars({ mutex: new Mutex(env.other, name) })), null);
      const before = await scriptCalls(env.server);
      assert.equal(await s.tryLock(vars({ mutex: new Mutex(env.other, name) })), null);
      assert.equal((await scriptCalls(env.server)) - before, 1, 'one attempt, no waiting');
      await lease.release();
    },
  }),
  defineRow({
    youUsed: 'Redisson `tryLock(waitTime, leaseTime, unit)`',
    snippets: {
      tryLock: ({ mutex, waitTime, leaseTime }) => mutex.acquire({ timeoutMs: waitTime, ttlMs: leaseTime, autoExtend: false }).catch((error) => (error instanceof LockTimeoutError ? null : Promise.reject(error))),
    },
    inLocksmith: (c) => `${c.tryLock}: a lease, or \`null\` (Redisson's \`false\`) when \`waitTime\` ran out`,
    async check(s, env) {
      const name = env.name();
      const holder = await holdElsewhere(env, name);
      const mutex = new Mutex(env.client, name);
      const [busy, waitedMs] = await elapsedMs(async () => s.tryLock(vars({ mutex, waitTime: 200, leaseTime: 300 })));
      assert.equal(busy, null);
      assert.ok(waitedMs >= 190, `waited ${waitedMs} ms of 200`);
      const waiting = track(s.tryLock(vars({ mutex, waitTime: 5_000, leaseTime: 300 })) as Promise<Lease | null>);
      await waitUntil('the waiter is queued', async () => (await waiterDeadlines(env, name)).length === 1);
      await holder.release();
      const outcome = await waiting.result;
      assert.ok('value' in outcome && outcome.value !== null, 'acquired within waitTime');
      await assertExpiresUnextended(env, outcome.value, 300);
    },
  }),
  defineRow({
    youUsed: 'Redisson `unlock()` / `isLocked()` / `isHeldByCurrentThread()` / `remainTimeToLive()`',
    snippets: {
      unlock: ({ lease }) => lease.release(),
      isLocked: ({ mutex }) => mutex.isLocked(),
      isHeld: ({ lease }) => lease.isOwned(),
      remaining: async ({ mutex }) => (await mutex.inspect()).remainingTtlMs,
    },
    inLocksmith: (c) =>
      `${c.unlock} (\`false\` where Redisson throws \`IllegalMonitorStateException\`) / ${c.isLocked} / ${c.isHeld} / ${c.remaining} (\`undefined\` where Redisson returns -2)`,
    async check(s, env) {
      const name = env.name();
      const mutex = new Mutex(env.client, name);
      assert.equal(await s.isLocked(vars({ mutex })), false);
      assert.equal(await s.remaining(vars({ mutex })), undefined);
      const lease = await mutex.acquire({ ttlMs: 5_000 });
      assert.equal(await s.isLocked(vars({ mutex })), true);
      assert.equal(await s.isHeld(vars({ lease })), true);
      const left = (await s.remaining(vars({ mutex }))) as number;
      assert.ok(left > 4_000 && left <= 5_000, `remaining ${left}`);
      await env.admin.command('DEL', lockKey(name));
      const other = await new Mutex(env.other, name).acquire();
      assert.equal(await s.isHeld(vars({ lease })), false, 'another holder now');
      assert.equal(await s.unlock(vars({ lease })), false, 'not held: false, no exception');
      assert.equal(await s.isLocked(vars({ mutex })), true, "the other holder's lock is untouched");
      await other.release();
    },
  }),
  defineRow({
    youUsed: 'Redisson `forceUnlock()`',
    snippets: { forceUnlock: ({ mutex }) => mutex.inspect().then(({ ownerToken }) => (ownerToken ? mutex.releaseToken(ownerToken) : false)) },
    inLocksmith: (c) => `${c.forceUnlock}: \`true\` if it freed the lock (handed to the next waiter, if any), \`false\` if nothing held it`,
    async check(s, env) {
      const name = env.name();
      const mutex = new Mutex(env.client, name);
      assert.equal(await s.forceUnlock(vars({ mutex })), false, 'nothing held it: false, no error');
      const holder = await new Mutex(env.other, name, { ttlMs: 60_000, autoExtend: false }).acquire();
      const waiter = track(new Mutex(env.client, name).acquire());
      await waitUntil('a waiter is queued', async () => (await waiterDeadlines(env, name)).length === 1);
      assert.equal(await s.forceUnlock(vars({ mutex })), true);
      const outcome = await waiter.result;
      assert.ok('value' in outcome, 'the waiter was woken and got the lock');
      assert.equal(await holder.isOwned(), false, 'the old holder no longer holds it');
      await outcome.value.release();
    },
  }),
  defineRow({
    youUsed: 'Redisson `RFencedLock.lockAndGetToken()`',
    snippets: { lock: ({ mutex }) => mutex.acquire({ timeoutMs: Infinity }), token: ({ lease }) => lease.fencingToken },
    inLocksmith: (c) =>
      `${c.lock} resolves with the lease; ${c.token} is its token (every lock is fenced). Keep the lease: \`lease.release()\` unlocks.`,
    async check(s, env) {
      const first = await assertWaitsForever(env, (mutex) => s.lock(vars({ mutex })) as Promise<Lease>);
      const token = s.token(vars({ lease: first }));
      assert.equal(await first.release(), true, 'the lease unlocks');
      const second = (await s.lock(vars({ mutex: new Mutex(env.other, first.name) }))) as Lease;
      assert.ok(s.token(vars({ lease: second })) > token, 'tokens increase');
      await second.release();
    },
  }),
  defineRow({
    youUsed: 'Redisson `getMultiLock(lock1, lock2, lock3).lock()` (RedissonMultiLock)',
    snippets: { lock: ({ client, resources }) => new MultiMutex(client, resources).acquire({ timeoutMs: Infinity }) },
    inLocksmith: (c) =>
      `${c.lock}: waits for ever for every name, holding none meanwhile (one script takes them all); each name stays a \`Mutex\` of its own, the watchdog extends them all at once, and losing one aborts \`lease.signal\``,
    async check(s, env) {
      const resources = [env.name(), env.name()];
      const lease = (await s.lock(vars({ client: env.client, resources }))) as Lease;
      assert.equal(lease.ttlMs, 30_000);
      for (const r of resources) assert.ok((await pttl(env, lockKey(r))) > 29_000);
      assert.equal(await new Mutex(env.other, resources[1] as string).tryAcquire(), null, 'each name excludes a Mutex');
      await env.admin.command('DEL', lockKey(resources[1] as string));
      assert.equal(await lease.isOwned(), false, 'one name lost: the lease is lost');
      await lease.release();
      assert.equal(await held(env, lockKey(resources[0] as string)), false, 'its release frees every name it still held');
    },
  }),
  defineRow({
    youUsed: 'Redisson `getFairLock(name)`',
    snippets: { fair: ({ client, name }) => new FairMutex(client, name) },
    inLocksmith: (c) => `${c.fair}: first come, first served, with direct hand-off; same options and methods as \`Mutex\``,
    async check(s, env) {
      const name = env.name();
      const holder = await (s.fair(vars({ client: env.client, name })) as FairMutex).acquire();
      const order: number[] = [];
      const waiters: Promise<void>[] = [];
      for (const id of [1, 2, 3]) {
        const fair = s.fair(vars({ client: id % 2 ? env.other : env.client, name })) as FairMutex;
        waiters.push(
          fair.acquire().then(async (lease) => {
            order.push(id);
            await lease.release();
          }),
        );
        await waitUntil(`waiter ${id} is queued`, async () => (await fair.inspect()).queueLength === id);
      }
      await holder.release();
      await Promise.all(waiters);
      assert.deepEqual(order, [1, 2, 3]);
    },
  }),
  defineRow({
    youUsed: 'Redisson reentrancy (`RLock` locked again by the thread holding it, `getHoldCount()`)',
    snippets: {
      create: ({ client, name }) => new ReentrantMutex(client, name),
      nested: ({ reentrant, routine }) => reentrant.using(() => reentrant.using(routine)),
      holdCount: async ({ reentrant }) => (await reentrant.inspect()).holdCount,
    },
    inLocksmith: (c) =>
      `${c.create}; ${c.nested} holds it twice: the holder is the enclosing \`using()\`, or an \`owner: new LockOwner()\` (Redisson's thread id). ${c.holdCount} is \`getHoldCount()\`; the lock is free after the last release, and a second \`release()\` of a hold resolves \`false\` (Redisson throws).`,
    async check(s, env) {
      const name = env.name();
      const reentrant = s.create(vars({ client: env.client, name })) as ReentrantMutex;
      const other = new ReentrantMutex(env.other, name);
      const seen: number[] = [];
      const routine: LockedWork<unknown> = async (_signal, lease) => {
        seen.push(lease.fencingToken, (await s.holdCount(vars({ reentrant }))) as number);
        // Inside the callback, calls on this lock name are this holder's: another holder is named.
        assert.equal(await other.tryAcquire({ owner: new LockOwner() }), null, 'another holder is kept out');
      };
      await s.nested(vars({ reentrant, routine }));
      assert.equal(seen[1], 2, 'two holds inside');
      assert.equal(await s.holdCount(vars({ reentrant })), 0);
      assert.equal(await reentrant.isLocked(), false, 'free after the last release');
      const lease = await reentrant.acquire();
      assert.ok(lease.fencingToken > (seen[0] as number));
      assert.equal(await lease.release(), true);
      assert.equal(await lease.release(), false);
    },
  }),
  defineRow({
    youUsed: 'Redisson `getReadWriteLock(name)`: `readLock()` / `writeLock()`',
    snippets: {
      create: ({ client, name }) => new ReadWriteLock(client, name),
      read: ({ rw }) => rw.readLock().acquire(),
      write: ({ rw }) => rw.writeLock().acquire(),
    },
    inLocksmith: (c) =>
      `${c.create}; ${c.read} (shared) / ${c.write} (exclusive). One FIFO queue: writers are not starved (Redisson lets readers in while a writer waits); only a process already holding a read lets its own new readers share that hold, for at most \`maxLocalBatchMs\` (10 ms) from its grant. Write to read: \`rw.downgrade(writeLease)\`; read to write, inside \`using()\`, rejects with \`WouldDeadlockError\`.`,
    async check(s, env) {
      const name = env.name();
      const rw = s.create(vars({ client: env.client, name })) as ReadWriteLock;
      const other = s.create(vars({ client: env.other, name })) as ReadWriteLock;
      const [r1, r2] = (await Promise.all([s.read(vars({ rw })), s.read(vars({ rw: other }))])) as Lease[];
      assert.equal((await rw.inspect()).readers, 2, 'readers share it');
      const writing = track(s.write(vars({ rw: other })) as Promise<Lease>);
      await waitUntil('the writer is queued', async () => (await rw.inspect()).queueLength === 1);
      // From the writer's process: a reader of a process already holding a read may join that
      // hold for up to \`maxLocalBatchMs\` from its grant, even with another process's writer queued.
      const lateReader = track(s.read(vars({ rw: other })) as Promise<Lease>);
      await waitUntil('a later reader queues behind the writer', async () => (await rw.inspect()).queueLength === 2);
      await r1?.release();
      await r2?.release();
      const written = await writing.result;
      assert.ok('value' in written, 'the writer got in before the later reader');
      assert.equal((await rw.inspect()).readers, 0);
      assert.equal(await rw.downgrade(written.value), true);
      const late = await lateReader.result;
      assert.ok('value' in late, 'the downgrade let the queued reader in');
      assert.equal((await rw.inspect()).readers, 2);
      await rejectsWith(rw.readLock().using(() => rw.writeLock().acquire()), WouldDeadlockError);
      await late.value.release();
      await written.value.release();
    },
  }),
  defineRow({
    youUsed: '**async-mutex** (one process) `mutex.runExclusive(callback)` / `const release = await mutex.acquire()` / `mutex.isLocked()`',
    snippets: {
      runExclusive: ({ mutex, callback }) => mutex.using(() => callback()),
      acquire: ({ mutex }) => mutex.acquire().then((lease) => () => lease.release()),
      isLocked: ({ mutex }) => mutex.isLocked(),
    },
    inLocksmith: (c) =>
      `${c.runExclusive} / ${c.acquire} / ${c.isLocked}: the same shapes, across processes (a promise where async-mutex answers at once). \`withTimeout(mutex, ms)\` is the \`timeoutMs\` option; \`LockTimeoutError\` is its \`E_TIMEOUT\`.`,
    async check(s, env) {
      const name = env.name();
      const mutex = new Mutex(env.client, name);
      const other = new Mutex(env.other, name);
      const log: string[] = [];
      const critical = (id: string) => async () => {
        log.push(`${id} in`, `locked: ${await s.isLocked(vars({ mutex }))}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
        log.push(`${id} out`);
        return id;
      };
      const results = await Promise.all([
        s.runExclusive(vars({ mutex, callback: critical('a') })),
        s.runExclusive(vars({ mutex: other, callback: critical('b') })),
      ]);
      assert.deepEqual(results, ['a', 'b'], "each resolves with its callback's result");
      const [first, second] = log[0] === 'a in' ? ['a', 'b'] : ['b', 'a'];
      assert.deepEqual(log, [`${first} in`, 'locked: true', `${first} out`, `${second} in`, 'locked: true', `${second} out`]);
      assert.equal(await s.isLocked(vars({ mutex })), false, 'released when the callback settled');
      const failing = () => Promise.reject(new Error('boom'));
      await assert.rejects(s.runExclusive(vars({ mutex, callback: failing })) as Promise<unknown>, /boom/);
      assert.equal(await s.isLocked(vars({ mutex })), false, 'released after a throw too');
      const release = (await s.acquire(vars({ mutex }))) as () => Promise<boolean>;
      assert.equal(typeof release, 'function');
      await rejectsWith(new Mutex(env.other, name, { timeoutMs: 100 }).acquire(), LockTimeoutError);
      assert.equal(await release(), true);
      assert.equal(await release(), false, 'a second release changes nothing');
      assert.equal(await s.isLocked(vars({ mutex })), false);
    },
  }),
  defineRow({
    youUsed: 'async-mutex `new Semaphore(value)` / `semaphore.runExclusive(callback, weight)`',
    snippets: {
      create: ({ client, name, value }) => new Semaphore(client, name, { limit: value }),
      run: ({ semaphore, callback, weight }) => semaphore.using(() => callback(), { permits: weight }),
    },
    inLocksmith: (c) => `${c.create} / ${c.run}: \`weight\` permits, all or none, in arrival order`,
    async check(s, env) {
      const name = env.name();
      const semaphore = s.create(vars({ client: env.client, name, value: 3 })) as Semaphore;
      const other = s.create(vars({ client: env.other, name, value: 3 })) as Semaphore;
      const callback = async () => {
        const held = (await semaphore.inspect()).permitsHeld;
        const tooMany = await other.tryAcquire({ permits: 2 });
        const oneMore = await other.tryAcquire();
        await oneMore?.release();
        return [held, tooMany, oneMore !== null];
      };
      assert.deepEqual(await s.run(vars({ semaphore, callback, weight: 2 })), [2, null, true], 'two of three permits held');
      assert.equal((await semaphore.inspect()).permitsHeld, 0, 'released when the callback settled');
    },
  }),
];

/** Every row, in README order. */
export const rows: readonly AnyRow[] = definedRows;
