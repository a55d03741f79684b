/**
 * Locks spread over a Redis Cluster against the same on one server (issue #24's cell): 10 clients,
 * each its own connection (an ioredis `Cluster` or `Redis`) in this one process, take and release
 * locks on 1,000 names chosen at random (so every slot's primary serves some), for a fixed window.
 * Locksmith's `Mutex` beside every peer that takes an ioredis `Cluster` (redis-semaphore, node-redlock,
 * @sesamecare-oss/redlock, redlock-universal; each with its defaults, as the N × 1 tables run them).
 * Acquisitions/s and errors; the cluster is 3 primaries with a replica each, all on this machine.
 *
 *   npm run build && node --import tsx bench/cluster.ts [--ms=5000] [--clients=10] [--only=REGEX]
 */
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { Cluster, Redis } from 'ioredis';
import { Mutex as PeerMutex } from 'redis-semaphore';
import NodeRedlock from 'redlock';
import { createLock, IoredisAdapter } from 'redlock-universal';
import { startCluster } from '../test/fixtures/redis-cluster.js';
import { startRedis } from '../tools/redis-server.js';
import { locksmith as lib, locksmithSource } from './locksmith.js';
import { redisCpuUs } from './redis-stats.js';

const value = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const windowMs = Number(value('ms') ?? 5_000);
const clientCount = Number(value('clients') ?? 10);
const only = value('only') ? new RegExp(value('only') as string) : undefined;
const NAMES = 1_000;
const TTL_MS = 10_000;

type Client = Redis | Cluster;
type Cycle = (client: Client, name: string) => Promise<void>;
type RedlockLike = { acquire(keys: string[], ttl: number): Promise<{ release(): Promise<unknown> }> };

/** node-redlock and its fork keep one instance per client (their retry settings live in it). */
function redlockCycle(make: (client: Client) => RedlockLike): Cycle {
  const instances = new Map<Client, RedlockLike>();
  return async (client, name) => {
    let redlock = instances.get(client);
    if (!redlock) {
      redlock = make(client);
      instances.set(client, redlock);
    }
    const lock = await redlock.acquire([`bench:{${name}}`], TTL_MS);
    await lock.release();
  };
}

const allImpls: readonly { label: string; cycle: Cycle }[] = [
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
  {
    label: 'redlock 5.0.0-beta.2',
    cycle: redlockCycle((client) => new NodeRedlock([client as Redis]) as unknown as RedlockLike),
  },
  {
    label: '@sesamecare-oss/redlock',
    cycle: redlockCycle((client) => new SesameRedlock([client]) as unknown as RedlockLike),
  },
  {
    label: 'redlock-universal',
    cycle: async (client, name) => {
      const lock = createLock({ adapter: new IoredisAdapter(client), key: `bench:{${name}}`, ttl: TTL_MS });
      const handle = await lock.acquire();
      await lock.release(handle);
    },
  },
];
const impls = allImpls.filter((impl) => !only || only.test(impl.label));

interface Cell {
  perSecond: number;
  errors: number;
  /** CPU per acquisition, µs: every Redis node's (replicas too: they apply what primaries write), and this process's. */
  serverUs: number;
  clientUs: number;
}

/** The CPU every node of a deployment has spent so far, µs. */
async function serversCpuUs(admins: readonly Redis[]): Promise<number> {
  let total = 0;
  for (const admin of admins) total += await redisCpuUs(admin);
  return total;
}

async function measure(clients: readonly Client[], admins: readonly Redis[], cycle: Cycle): Promise<Cell> {
  let done = 0;
  let errors = 0;
  const serverBefore = await serversCpuUs(admins);
  const clientBefore = process.cpuUsage();
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
  const client = process.cpuUsage(clientBefore);
  const serverUs = (await serversCpuUs(admins)) - serverBefore;
  const per = (us: number) => Math.round(us / Math.max(done, 1));
  return {
    perSecond: Math.round((done / windowMs) * 1_000),
    errors,
    serverUs: per(serverUs),
    clientUs: per(client.user + client.system),
  };
}

const server = await startRedis();
const cluster = await startCluster();
try {
  const deployments: [string, () => Client, readonly string[]][] = [
    ['one server', () => new Redis(server.url), [server.url]],
    [
      'cluster, 3 primaries',
      () => new Cluster([...cluster.startupNodes], { shardedSubscribers: true }),
      cluster.nodes.map((node) => node.url),
    ],
  ];
  const rows: string[] = [];
  for (const [deployment, connect, nodeUrls] of deployments) {
    const clients = Array.from({ length: clientCount }, connect);
    const admins = nodeUrls.map((url) => new Redis(url));
    try {
      for (const impl of impls) {
        await measure(clients, admins, impl.cycle); // warm-up: connections, script caches, JIT
        const cell = await measure(clients, admins, impl.cycle);
        rows.push(
          `| ${impl.label} | ${deployment} | ${cell.perSecond.toLocaleString('en-US')} | ${cell.serverUs} | ${cell.clientUs} | ${cell.errors} |`,
        );
      }
    } finally {
      await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
      for (const admin of admins) admin.disconnect();
    }
  }
  console.log(
    `Locksmith from ${locksmithSource}; ${clientCount} clients in one process, ${NAMES} lock names at random, ${windowMs} ms per cell after as long a warm-up`,
  );
  console.log(
    '| implementation | deployment | acquisitions/s | Redis CPU µs/acq | client CPU µs/acq | errors |',
  );
  console.log('|:--|:--|--:|--:|--:|--:|');
  for (const row of rows) console.log(row);
} finally {
  await Promise.all([server.stop(), cluster.stop()]);
}
