/**
 * Locksmith on a real Redis Cluster (test/fixtures/redis-cluster.ts: 3 primaries with a replica
 * each): the fixture itself, then what only a cluster has.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type RedisCluster, startCluster } from '../fixtures/redis-cluster.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the cluster fixture', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    const pids = cluster?.nodes.map((node) => node.pid) ?? [];
    await cluster?.stop();
    assert.deepEqual(pids.filter(alive), [], 'stop() ended every node by its PID');
  });

  test('3 primaries with a replica each, on loopback ports other than 6379, every slot served', async () => {
    assert.equal(cluster.nodes.length, 6);
    assert.ok(cluster.nodes.every((node) => node.host === '127.0.0.1' && node.port !== 6379));
    const primaries = await cluster.primaries();
    assert.equal(primaries.length, 3);
    const replicas = await Promise.all(primaries.map((primary) => cluster.replicaOf(primary)));
    assert.equal(new Set(replicas.map((r) => r.port)).size, 3, 'one replica per primary');
    for (const node of cluster.nodes) {
      const info = await node.command('CLUSTER', 'INFO');
      assert.match(info, /cluster_state:ok/);
      assert.match(info, /cluster_slots_ok:16384/);
    }
  });
});
