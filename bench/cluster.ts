/**
 * Locks spread over a Redis Cluster against the same on one server (issue #24's cell): 10 clients,
 * each its own connection (an ioredis `Cluster` or `Redis`, or a Valkey GLIDE `GlideClusterClient`
 * or `GlideClient`) in this one process, take and release locks on 1,000 names chosen at random (so
 * every slot's primary serves some), for a fixed window. Locksmith's `Mutex` beside every peer that
 * takes such a client (on ioredis: redis-semaphore, node-redlock, @sesamecare-oss/redlock,
 * redlock-universal; on GLIDE: redlock-universal; each with its defaults, as the N × 1 tables run
 * them). Acquisitions/s, CPU per acquisition and errors; the cluster is 3 primaries with a replica
 * each, all on this machine.
 *
 *   npm run build && node --import tsx bench/cluster.ts [--ms=5000] [--clients=10] [--only=REGEX]
 */
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { Cluster, Redis } from 'ioredis';
import { Mutex as PeerMutex } from 'redis-semaphore';
import NodeRedlock from 'redlock';
import { createLock, GlideAdapter, IoredisAdapter } from 'redlock-universal';
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

type GlideClient =
  | import('@valkey/valkey-glide').GlideClient
  | import('@valkey/valkey-glide').GlideClusterClient;
type Client = Redis | Cluster | GlideClient;
type Cycle = (client: Client, name: string) => Promise<void>;
type Library = 'ioredis' | 'valkey-glide';
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

/** Locksmith's Mutex: the same on every client. */
const locksmithCycle: Cycle = async (client, name) => {
  const lease = await new lib.Mutex(client, `bench:${name}`, { ttlMs: TTL_MS }).acquire();
  await lease.release();
};

/** redlock-universal's single-server lock, on whichever of its adapters fits the client. */
function universalCycle(adapterFor: (client: Client) => IoredisAdapter | GlideAdapter): Cycle {
  return async (client, name) => {
    const lock = createLock({ adapter: adapterFor(client), key: `bench:{${name}}`, ttl: TTL_MS });
    const handle = await lock.acquire();
    await lock.release(handle);
  };
}

const allImpls: readonly { label: string; library: Library; cycle: Cycle }[] = [
  { label: 'Locksmith Mutex', library: 'ioredis', cycle: locksmithCycle },
  {
    label: 'redis-semaphore Mutex',
    library: 'ioredis',
    cycle: async (client, name) => {
      const mutex = new PeerMutex(client as Redis, `bench:{${name}}`, { lockTimeout: TTL_MS });
      await mutex.acquire();
      await mutex.release();
    },
  },
  {
    label: 'redlock 5.0.0-beta.2',
    library: 'ioredis',
    cycle: redlockCycle((client) => new NodeRedlock([client as Redis]) as unknown as RedlockLike),
  },
  {
    label: '@sesamecare-oss/redlock',
    library: 'ioredis',
    cycle: redlockCycle((client) => new SesameRedlock([client as Redis | Cluster]) as unknown as RedlockLike),
  },
  {
    label: 'redlock-universal',
    library: 'ioredis',
    cycle: universalCycle((client) => new IoredisAdapter(client as Redis | Cluster)),
  },
  { label: 'Locksmith Mutex', library: 'valkey-glide', cycle: locksmithCycle },
  {
    label: 'redlock-universal',
    library: 'valkey-glide',
    cycle: universalCycle((client) => new GlideAdapter(client as GlideClient)),
  },
];
const impls = allImpls.filter((impl) => !only || only.test(`${impl.label} (${impl.library})`));

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

async function close(client: Client): Promise<void> {
  if (client instanceof Redis || client instanceof Cluster) {
    await client.quit().catch(() => client.disconnect());
  } else {
    client.close();
  }
}

const server = await startRedis();
const cluster = await startCluster();
try {
  const { GlideClient, GlideClusterClient } = await import('@valkey/valkey-glide');
  const serverAddress = [{ host: '127.0.0.1', port: server.port }];
  const connectors: Record<Library, [() => Promise<Client>, () => Promise<Client>]> = {
    ioredis: [
      async () => new Redis(server.url),
      async () => new Cluster([...cluster.startupNodes], { shardedSubscribers: true }),
    ],
    'valkey-glide': [
      () => GlideClient.createClient({ addresses: serverAddress }),
      () => GlideClusterClient.createClient({ addresses: [...cluster.startupNodes] }),
    ],
  };
  const deployments = [
    { name: 'one server', at: 0, nodeUrls: [server.url] },
    { name: 'cluster, 3 primaries', at: 1, nodeUrls: cluster.nodes.map((node) => node.url) },
  ] as const;
  const rows: string[] = [];
  for (const deployment of deployments) {
    const admins = deployment.nodeUrls.map((url) => new Redis(url));
    for (const library of Object.keys(connectors) as Library[]) {
      const ofLibrary = impls.filter((impl) => impl.library === library);
      if (ofLibrary.length === 0) continue;
      const connect = connectors[library][deployment.at] as () => Promise<Client>;
      const clients = await Promise.all(Array.from({ length: clientCount }, connect));
      try {
        for (const impl of ofLibrary) {
          await measure(clients, admins, impl.cycle); // warm-up: connections, script caches, JIT
          const cell = await measure(clients, admins, impl.cycle);
          rows.push(
            `| ${impl.label} | ${library} | ${deployment.name} | ${cell.perSecond.toLocaleString('en-US')} | ${cell.serverUs} | ${cell.clientUs} | ${cell.errors} |`,
          );
        }
      } finally {
        await Promise.all(clients.map(close));
      }
    }
    for (const admin of admins) admin.disconnect();
  }
  console.log(
    `Locksmith from ${locksmithSource}; ${clientCount} clients in one process, ${NAMES} lock names at random, ${windowMs} ms per cell after as long a warm-up`,
  );
  console.log(
    '| implementation | client | deployment | acquisitions/s | Redis CPU µs/acq | client CPU µs/acq | errors |',
  );
  console.log('|:--|:--|:--|--:|--:|--:|--:|');
  for (const row of rows) console.log(row);
} finally {
  await Promise.all([server.stop(), cluster.stop()]);
}
