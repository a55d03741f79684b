/**
 * The lock contract (test/suites/lock-contract.ts) on a real Redis Cluster, 3 primaries with a
 * replica each (one cluster for the file): every lock kind but those over independent servers (the
 * RedlockMutex and RedlockSemaphore refuse cluster clients: test/integration/cluster.test.ts), on the ioredis Cluster, on the node-redis
 * v4 cluster client (the one whose evalSha cannot route, so the adapter's own routing is covered;
 * v5 and v6 share its adapter) and on Valkey GLIDE's `GlideClusterClient` (routed by the adapter
 * too). Each test's lock names are fresh, so they fall on many slots, and on every primary.
 */
import { after, before } from 'node:test';
import * as sources from '../../src/index.js';
import { lockKinds } from '../../tools/lock-kinds/registry.js';
import { glideClusterKind, ioredisClusterKind6, nodeRedisClusterV4Kind } from '../fixtures/clients.js';
import { clusterForSuite } from '../fixtures/helpers.js';
import { type RedisCluster, startCluster } from '../fixtures/redis-cluster.js';
import { lockContract } from '../suites/lock-contract.js';

let cluster: RedisCluster;
before(async () => {
  cluster = await startCluster();
});
after(async () => {
  await cluster?.stop();
});

for (const lockKind of lockKinds(sources)) {
  if (lockKind.independentServers) continue;
  for (const kind of [ioredisClusterKind6, nodeRedisClusterV4Kind, glideClusterKind]) {
    lockContract(lockKind, kind, () => clusterForSuite(kind, () => cluster));
  }
}
