/**
 * Issue 34, item 7: every public call that talks to Redis ends within its documented bound, in the
 * same typed error, whether the server stopped answering (SIGSTOP) or died (SIGKILL). Before,
 * `isOwned()`, `isLocked()`, `inspect()`, `extendToken()` and `releaseToken()` waited as long as the
 * client kept them (8 s for a paused server, 73.6 s on ioredis' defaults for a dead one) and
 * rejected with the client's own errors (node-redis `SocketClosedUnexpectedlyError`, `TimeoutError`).
 *
 * The walk is every call of `docs/api.md` that makes a round trip: each lock kind of the registry on
 * the default client, and the Mutex on every client. Each call must reject with
 * `RedisUnavailableError` (with a `cause`), after at most `replyTimeoutMs` (acquire: its
 * `timeoutMs` + `replyTimeoutMs`); the assertion allows scheduling slack on a busy machine, far
 * below what the client would have taken by itself.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as lib from '../../src/index.js';
import { RedisUnavailableError } from '../../src/index.js';
import { type LockKind, lockKinds } from '../../tools/lock-kinds/registry.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { type ClientKind, clientKinds, ioredisKind } from '../fixtures/clients.js';
import { nameMaker } from '../fixtures/helpers.js';

const freshName = nameMaker('bounded');
const REPLY_TIMEOUT_MS = 400;
const ACQUIRE_TIMEOUT_MS = 300;
/** Scheduling slack on a loaded machine: the clients' own bounds are 5 s (node-redis) to 73.6 s. */
const SLACK_MS = 2_500;

type Fault = 'paused' | 'killed';

/** Past this a call is reported as hanging (the test itself must end). */
const HUNG_MS = 12_000;

/** How one call ended, and when. */
async function timed(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer after ${HUNG_MS} ms`)), HUNG_MS);
  });
  try {
    const value = await Promise.race([call(), hung]);
    return { error: new Error(`resolved with ${String(value)}`), ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

async function walk(kind: LockKind, clientKind: ClientKind, fault: Fault): Promise<void> {
  const server: RedisServer = await startRedis();
  const client = await clientKind.create(server.url);
  try {
    const options = { ttlMs: 30_000, replyTimeoutMs: REPLY_TIMEOUT_MS };
    const lock = kind.create(client.client, freshName(), options);
    const lease = await lock.acquire();
    const other = kind.create(client.client, freshName(), options);
    // Its own name: calls of one Mutex in one process would queue behind each other in the process.
    const third = kind.create(client.client, freshName(), options);
    const extendToken = (lock as unknown as { extendToken(token: string, ttlMs: number): Promise<boolean> })
      .extendToken;
    if (fault === 'paused') server.pause();
    else await server.kill();
    const bound = REPLY_TIMEOUT_MS + SLACK_MS;
    const calls: [string, () => Promise<unknown>, number][] = [
      ['lease.isOwned()', () => lease.isOwned(), bound],
      ['lease.extend()', () => lease.extend(), bound],
      ['lock.isLocked()', () => lock.isLocked(), bound],
      ['lock.inspect()', () => lock.inspect(), bound],
      ['lock.extendToken()', () => extendToken.call(lock, lease.token, 30_000), bound],
      ['lock.releaseToken()', () => lock.releaseToken('a-token-nobody-holds'), bound],
      ['other.tryAcquire()', () => other.tryAcquire(), bound],
      ['other.acquire()', () => other.acquire({ timeoutMs: ACQUIRE_TIMEOUT_MS }), ACQUIRE_TIMEOUT_MS + bound],
      [
        'third.using()',
        () => third.using(async () => {}, { timeoutMs: ACQUIRE_TIMEOUT_MS }),
        ACQUIRE_TIMEOUT_MS + bound,
      ],
    ];
    const outcomes = await Promise.all(calls.map(([, call]) => timed(call)));
    // The release last: the others used the lease.
    const release = await timed(() => lease.release());
    const wrong: string[] = [];
    for (const [index, [what, , within]] of [
      ...calls,
      ['lease.release()', () => lease.release(), bound] as const,
    ].entries()) {
      const { error, ms } =
        index < calls.length ? (outcomes[index] as { error: unknown; ms: number }) : release;
      if (!(error instanceof RedisUnavailableError) || !(error.cause instanceof Error)) {
        wrong.push(`${what}: ${String(error)}`);
      } else if (ms > within) {
        wrong.push(`${what}: ended after ${Math.round(ms)} ms (bound ${within})`);
      }
    }
    assert.deepEqual(wrong, [], `${kind.name} on ${clientKind.name}, server ${fault}`);
  } finally {
    if (fault === 'paused') server.resume();
    await client.close();
    await server.stop();
  }
}

const kinds = lockKinds(lib);
const mutex = kinds.find((kind) => kind.name === 'Mutex') as LockKind;

for (const fault of ['paused', 'killed'] as const) {
  describe(`every public call is bounded, Redis ${fault}`, () => {
    for (const kind of kinds) {
      test(`${kind.name} on ${ioredisKind.name}`, () => walk(kind, ioredisKind, fault));
    }
    for (const clientKind of clientKinds.filter((candidate) => candidate !== ioredisKind)) {
      test(`Mutex on ${clientKind.name}`, () => walk(mutex, clientKind, fault));
    }
  });
}
