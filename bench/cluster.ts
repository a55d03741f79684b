/**
 * Locks spread over a Redis Cluster against the same on one server (issue #24's cell): 10 clients,
 * each its own connection (an ioredis `Cluster` or `Redis`) in this one process, take and release
 * locks on 1,000 names chosen at random (so every slot's primary serves some), for a fixed window.
 * Locksmith's `Mutex` beside redis-semaphore's `Mutex`, the peer that takes an ioredis `Cluster`.
 * Acquisitions/s and errors; the cluster is 3 primaries with a replica each, all on this machine.
 *
 *   npm run build && node --import tsx bench/cluster.ts [--ms=5000] [--clients=10]
 */
import { Cluster, Redis } from 'ioredis';
import { Mutex as PeerMutex } from 'redis-semaphore';
import { startCluster } from '../test/fixtures/redis-cluster.js';
import { startRedis } from '../tools/redis-server.js';
import { locksmith as lib, locksmithSource } from './locksmith.js';

const value = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const windowMs = Number(value('ms') ?? 5_000);
const clientCount = Number(value('clients') ?? 10);
const NAMES = 1_000;
const TTL_MS = 10_000;

type Client = Redis | Cluster;
type Cycle = (client: Client, name: string) => Promise<void>;

const impls: readonly { label: string; cycle: Cycle }[] = [
  {
    label: 'Locksmith Mutex',
    cycle: async (client, name) => {
      const lease = await new lib.Mutex(client, `bench:${name}`, { ttlMs: TTL_MS }).acquire();
      await lease.release();
    },
  },
  {
    label: 'redis-semaphore Mutex',
    cycle: async (client, name) => {
      const mutex = new PeerMutex(client as Redis, `bench:{${name}}`, { lockTimeout: TTL_MS });
      await mutex.acquire();
      await mutex.release();
    },
  },
];

async function measure(
  clients: readonly Client[],
  cycle: Cycle,
): Promise<{ perSecond: number; errors: number }> {
  let done = 0;
  let errors = 0;
  const until = performance.now() + windowMs;
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < until) {
        try {
          await cycle(client, `n${Math.floor(Math.random() * NAMES)}`);
          done += 1;
        } catch {
          errors += 1;
        }
      }
    }),
  );
  return { perSecond: Math.round((done / windowMs) * 1_000), errors };
}

const server = await startRedis();
const cluster = await startCluster();
try {
  const deployments: [string, () => Client][] = [
    ['one server', () => new Redis(server.url)],
    ['cluster, 3 primaries', () => new Cluster([...cluster.startupNodes], { shardedSubscribers: true })],
  ];
  const rows: string[] = [];
  for (const [deployment, connect] of deployments) {
    const clients = Array.from({ length: clientCount }, connect);
    try {
      for (const impl of impls) {
        await measure(clients, impl.cycle); // warm-up: connections, script caches, JIT
        const { perSecond, errors } = await measure(clients, impl.cycle);
        rows.push(`| ${impl.label} | ${deployment} | ${perSecond.toLocaleString('en-US')} | ${errors} |`);
      }
    } finally {
      await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    }
  }
  console.log(
    `Locksmith from ${locksmithSource}; ${clientCount} clients in one process, ${NAMES} lock names at random, ${windowMs} ms per cell after as long a warm-up`,
  );
  console.log('| implementation | deployment | acquisitions/s | errors |');
  console.log('|:--|:--|--:|--:|');
  for (const row of rows) console.log(row);
} finally {
  await Promise.all([server.stop(), cluster.stop()]);
}
