/**
 * A cluster client's own connection options reach Locksmith's connections: a cluster with
 * `requirepass` (every cluster client authenticates its subscriber too) and an ioredis `keyPrefix`
 * with a hash tag (the channel follows the keys' slot).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { contextFor } from '../../src/adapters/client-context.js';
import * as sources from '../../src/index.js';
import { type LockEvent, Mutex, subscribeLockEvents } from '../../src/index.js';
import { lockKinds } from '../../tools/lock-kinds/registry.js';
import { rawCommand } from '../../tools/redis-server.js';
import { bundled } from '../fixtures/bundle.js';
import { clusterClientKinds, ioredisClusterTaggedPrefixKinds } from '../fixtures/clients.js';
import { awaitedLater, clusterForSuite, nameMaker, until } from '../fixtures/helpers.js';
import { type RedisCluster, startCluster } from '../fixtures/redis-cluster.js';

const PASSWORD = 'cluster-secret';
const childFile = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/cluster-waiter-child.ts');

/** How long a child may live after it said it closed its clients: the guarantee is "it exits". */
const EXIT_BOUND_MS = 15_000;

/** Runs cluster-waiter-child.ts; resolves with its report and exit code, or fails if it never exits. */
function runChild(args: string[]): Promise<{ servedMs: number; timeoutMs: number; code: number | null }> {
  const child = spawn(process.execPath, [bundled(childFile), ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let report: { servedMs: number; timeoutMs: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  child.on('message', (message) => {
    report = JSON.parse(String(message));
    timer = setTimeout(() => child.kill('SIGKILL'), EXIT_BOUND_MS);
  });
  return new Promise((resolve, reject) => {
    // 'close', not 'exit': it comes once the IPC channel is closed too, after every message was read.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (!report) reject(new Error(`the child exited (${code}) before reporting`));
      else if (signal === 'SIGKILL')
        reject(
          new Error(
            `the child was still alive ${EXIT_BOUND_MS} ms after closing its clients ` +
              `(its waiter was served ${Math.round(report.servedMs)} ms after the release)`,
          ),
        );
      else resolve({ ...report, code });
    });
  });
}

let cluster: RedisCluster;
before(async () => {
  cluster = await startCluster({ requirepass: PASSWORD });
});
after(async () => {
  await cluster?.stop();
});

describe('a cluster with requirepass', () => {
  const name = nameMaker('cluster-auth');
  for (const kind of clusterClientKinds) {
    test(`a waiter is woken by the release and the process exits (${kind.name})`, async (t) => {
      const address = JSON.stringify({ startupNodes: cluster.startupNodes, password: PASSWORD });
      const { servedMs, timeoutMs, code } = await runChild([kind.name, address, name()]);
      t.diagnostic(`served ${Math.round(servedMs)} ms after the release`);
      // Woken by the hand-off's message, not by its own deadline (the holder's TTL is longer still).
      assert.ok(servedMs < timeoutMs / 2, `served ${Math.round(servedMs)} ms after the release`);
      assert.equal(code, 0);
    });
  }
});

/** Sets every node's password from `from` to `to` (connections already authenticated stay so). */
async function changePassword(from: string, to: string): Promise<void> {
  await Promise.all(
    cluster.nodes.map((node) =>
      rawCommand(node.port, ['CONFIG', 'SET', 'requirepass', to, 'masterauth', to], 2_000, from),
    ),
  );
}

describe('a subscriber that cannot authenticate (the password changed after the client connected)', () => {
  const name = nameMaker('cluster-auth-changed');
  for (const kind of clusterClientKinds) {
    test(`its SUBSCRIBE is given up: reported, closed, and the waiter is served by polling (${kind.name})`, async (t) => {
      const address = { startupNodes: cluster.startupNodes, password: PASSWORD };
      const [a, b] = await Promise.all([kind.create(address), kind.create(address)]);
      const events: LockEvent[] = [];
      const stop = subscribeLockEvents((event) => events.push(event));
      const lockName = name();
      try {
        const held = await new Mutex(a.client, lockName, { ttlMs: 30_000 }).acquire();
        // b's connection to the lock's primary is made now (ioredis connects to a node on its first
        // command there) and stays authenticated; the subscriber it opens later cannot be.
        assert.equal(await new Mutex(b.client, lockName).tryAcquire(), null);
        await changePassword(PASSWORD, `${PASSWORD}-changed`);
        const timeoutMs = 25_000;
        const waiting = awaitedLater(new Mutex(b.client, lockName, { ttlMs: 30_000 }).acquire({ timeoutMs }));
        await until(
          () => events.some((e) => e.type === 'subscribe-failed' && e.lockName === lockName),
          `subscribe-failed is reported (${events.map((e) => e.type).join(', ')})`,
        );
        const releasedAt = performance.now();
        await held.release();
        const lease = await waiting;
        const servedMs = performance.now() - releasedAt;
        t.diagnostic(`served ${Math.round(servedMs)} ms after the release, by polling`);
        assert.ok(servedMs < timeoutMs / 2, `served ${Math.round(servedMs)} ms after the release`);
        await lease.release();
        // No waiter stays attached to the failed channel, and its connection was closed (a private
        // field of the hub, read here because nothing public says whether it holds a connection).
        const hub = contextFor(b.client).hub as unknown as { connection: unknown; watchers: number };
        assert.equal(hub.watchers, 0);
        assert.equal(hub.connection, undefined);
      } finally {
        stop();
        await changePassword(`${PASSWORD}-changed`, PASSWORD);
        await Promise.all([a.close(), b.close()]);
      }
    });
  }
});

/** The kinds a release hands to a waiter by a message on the waiter's channel. */
const HANDED_OFF = ['Mutex', 'FairMutex', 'Semaphore'];

for (const kind of ioredisClusterTaggedPrefixKinds) {
  describe(`an ioredis Cluster whose keyPrefix has a hash tag (${kind.name})`, () => {
    const clients = clusterForSuite(kind, () => cluster);
    const name = nameMaker('tagged-prefix');
    for (const lockKind of lockKinds(sources).filter((k) => HANDED_OFF.includes(k.name))) {
      test(`${lockKind.name}: a waiter is served at the release, not at the holder's TTL`, async (t) => {
        const { a, b } = clients;
        // A name whose own slot is on another primary than the prefix's tag: a channel named without
        // the prefix would be published on a node that does not serve it.
        const prefixPrimary = (await cluster.primaryFor('{app}')).port;
        let lockName = name();
        while ((await cluster.primaryFor(`{${lockName}}`)).port === prefixPrimary) lockName = name();
        const ttlMs = 30_000;
        const timeoutMs = 20_000;
        const holder = lockKind.create(a.client, lockName, { ttlMs });
        const held = await holder.acquire();
        const waiting = awaitedLater(lockKind.create(b.client, lockName, { ttlMs }).acquire({ timeoutMs }));
        await until(async () => (await lockKind.waiters(holder, a)) > 0, 'the waiter is queued');
        // And listening: released before its SSUBSCRIBE was confirmed, it would find the grant by the
        // attempt it makes right after subscribing, message or not.
        await until(
          async () => (await cluster.command('PUBSUB', 'SHARDCHANNELS')).includes(`{${lockName}}`),
          "the waiter's channel is subscribed",
        );
        const releasedAt = performance.now();
        await held.release();
        const lease = await waiting;
        const servedMs = performance.now() - releasedAt;
        t.diagnostic(`served ${Math.round(servedMs)} ms after the release`);
        // The holder's TTL is beyond the waiter's deadline: only the hand-off's message serves it early.
        assert.ok(servedMs < timeoutMs / 2, `served ${Math.round(servedMs)} ms after the release`);
        await lease.release();
      });
    }
  });
}
