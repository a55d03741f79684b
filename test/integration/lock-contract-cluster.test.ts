/**
 * The lock contract (test/suites/lock-contract.ts) on a real Redis Cluster, 3 primaries with a
 * replica each: every lock kind but the RedlockMutex (which refuses cluster clients:
 * test/integration/cluster.test.ts), on the ioredis Cluster, on the node-redis v4 cluster client
 * (the one whose evalSha cannot route, so the adapter's own routing is covered; v5 and v6 share its
 * adapter) and on Valkey GLIDE's `GlideClusterClient` (routed by the adapter too). Each test's lock
 * names are fresh, so they fall on many slots, and on every primary.
 *
 * One cluster per client kind: a client kind's blocks run one after the other on its cluster (some
 * tests count every node's commands, flush its scripts or kill its connections), and the three
 * client kinds, on three clusters, side by side.
 */
import { after, before, describe } from 'node:test';
import * as sources from '../../src/index.js';
import { lockKinds } from '../../tools/lock-kinds/registry.js';
import { glideClusterKind, ioredisClusterKind6, nodeRedisClusterV4Kind } from '../fixtures/clients.js';
import { clusterForSuite } from '../fixtures/helpers.js';
import { type RedisCluster, startCluster } from '../fixtures/redis-cluster.js';
import { lockContract } from '../suites/lock-contract.js';

const kinds = [ioredisClusterKind6, nodeRedisClusterV4Kind, glideClusterKind];

describe('the lock contract on a cluster', { concurrency: kinds.length }, () => {
  for (const kind of kinds) {
    describe(`on a cluster of its own (${kind.name})`, () => {
      let cluster: RedisCluster;
      before(async () => {
        cluster = await startCluster();
      });
      after(async () => {
        await cluster?.stop();
      });
      for (const lockKind of lockKinds(sources)) {
        if (lockKind.name === 'RedlockMutex') continue;
        lockContract(lockKind, kind, () => clusterForSuite(kind, () => cluster));
      }
    });
  }
});
