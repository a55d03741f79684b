/**
 * Fencing tokens of a RedlockMutex only grow, across 1,000 contended acquisitions while one node at
 * a time is killed and restarted (AOF, appendfsync always: the documented persistence assumption).
 *
 * The counters start far above the servers' clock in µs, so the time floor every grant applies
 * (next-fence.lua) cannot hide a mistake: tokens grow here only through the counters, the maximum
 * over the quorum and its write-back to a quorum.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { QuorumError, RedlockMutex } from '../../src/index.js';
import { lockKeys } from '../../src/protocol/keys.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { ioredisKind, nodeRedisV6Kind, type TestClient } from '../fixtures/clients.js';
import { until, watchUnhandledRejections } from '../fixtures/helpers.js';

const ACQUISITIONS = 1_000;
const CONTENDERS = 4;
/** Above any µs time stamp for ~140 years: only the counters can move tokens past it. */
const COUNTER_START = 6_000_000_000_000_000;

for (const kind of [ioredisKind, nodeRedisV6Kind]) {
  describe(`RedlockMutex fencing tokens across node restarts (${kind.name})`, () => {
    const servers: RedisServer[] = [];
    let unhandled: ReturnType<typeof watchUnhandledRejections>;
    before(async () => {
      for (let i = 0; i < 3; i += 1) servers.push(await startRedis({ appendOnly: true }));
      unhandled = watchUnhandledRejections();
    });
    after(async () => {
      unhandled.stop();
      await Promise.all(servers.map((s) => s.stop()));
    });

    test(`${ACQUISITIONS} contended acquisitions, one node at a time killed and restarted: tokens never decrease`, async (t) => {
      const name = `redlock-fence-${process.pid}`;
      for (const server of servers) {
        await server.command(
          'SET',
          lockKeys('locksmith', name).fence,
          String(COUNTER_START + Math.floor(Math.random() * 1000)),
        );
      }
      const clientSets: TestClient[][] = [];
      for (let c = 0; c < CONTENDERS; c += 1)
        clientSets.push(await Promise.all(servers.map((s) => kind.create(s.url))));
      let acquired = 0;
      /** Releases that found no quorum (the lease's servers were one of them down, one it never held). */
      let releasesWithoutQuorum = 0;
      let inside = 0;
      let last = 0;
      const restarts: number[] = [];
      try {
        const work = Promise.all(
          clientSets.map(async (set) => {
            const lock = new RedlockMutex(
              set.map((c) => c.client),
              name,
              { ttlMs: 2_000, nodeTimeoutMs: 40, timeoutMs: 30_000 },
            );
            while (acquired < ACQUISITIONS) {
              const lease = await lock.acquire();
              inside += 1;
              assert.equal(inside, 1, 'one holder at a time');
              assert.ok(lease.fencingToken > last, `token ${lease.fencingToken} after ${last}`);
              assert.ok(lease.fencingToken > COUNTER_START, 'tokens come from the counters');
              last = lease.fencingToken;
              acquired += 1;
              await new Promise((resolve) => setImmediate(resolve));
              inside -= 1;
              // Held on two servers, one of which is then killed, a lease cannot find a quorum to
              // release it: that is reported (the key expires by its TTL), never a second holder.
              await lease.release().catch((error: unknown) => {
                if (!(error instanceof QuorumError)) throw error;
                releasesWithoutQuorum += 1;
              });
            }
          }),
        );
        const chaos = (async () => {
          for (let i = 0; acquired < ACQUISITIONS - 100; i = (i + 1) % servers.length) {
            const server = servers[i] as RedisServer;
            const before = acquired;
            await server.kill();
            await until(
              () => acquired >= before + 60 || acquired >= ACQUISITIONS,
              'acquisitions go on without it',
              30_000,
            );
            await server.restart();
            restarts.push(i);
            const back = acquired;
            await until(
              () => acquired >= back + 60 || acquired >= ACQUISITIONS,
              'acquisitions go on after it came back',
              30_000,
            );
          }
        })();
        await Promise.all([work, chaos]);
        assert.ok(restarts.length >= 3, `every node was restarted (${restarts.length} restarts)`);
        assert.ok(acquired >= ACQUISITIONS);
        assert.deepEqual(unhandled.reasons, [], 'no unhandled rejections');
        t.diagnostic(
          `${kind.name}: ${acquired} acquisitions, ${restarts.length} restarts, last token ${last}, ${releasesWithoutQuorum} releases without a quorum`,
        );
      } finally {
        await Promise.all(clientSets.flat().map((c) => c.close().catch(() => {})));
      }
    });
  });
}
