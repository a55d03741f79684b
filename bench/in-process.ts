/**
 * Client CPU per contended acquisition, measured in ONE process: N clients (each its own ioredis
 * connection and subscriber, as N processes would have) take turns on one lock, and
 * `process.cpuUsage()` is divided by the acquisitions. With one process there is no scheduling of
 * eleven processes on two cores in the figure, so it isolates what the library's own code costs per
 * hand-off, and it is steadier on a shared machine than the multi-process cells of `npm run bench`.
 * Kinds run alternately; the minimum over the runs is reported (noise only ever adds CPU).
 *
 *   node --import tsx bench/in-process.ts [--kinds=fair,mutex,reference] [--clients=10] [--runs=4]
 *     [--ms=2000] [--heap]
 *
 * A kind may also be any ioredis implementation id of `npm run bench` (bench/impls.ts), e.g.
 * `--kinds=locksmith-redlock-ioredis,redis-semaphore-redlock --clients=5`: the three-server
 * (Redlock) ones run on three servers started here, each client with its own connections.
 *
 * `--heap` adds a sampling heap profile (objects collected by GC included): bytes allocated per
 * acquisition by function, heaviest first. Locksmith is loaded from dist/ when built (as users run
 * it; `npm run build`), else from src/ through tsx (slower: the header says which).
 */
import { Session } from 'node:inspector/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startRedis } from '../tools/redis-server.js';
import { type Clients, impls, type LockUnderTest } from './impls.js';
import { TTL_MS } from './kind-cells.js';
import { locksmithSource } from './locksmith.js';
import { referenceHandOff } from './reference-handoff.js';

const WARM_UP_MS = 1_000;

const value = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? undefined;
const kinds = (value('kinds') ?? 'fair,mutex,reference').split(',');
const clientCount = Number(value('clients') ?? 10);
const runs = Number(value('runs') ?? 4);
const windowMs = Number(value('ms') ?? 2_000);
const heap = process.argv.includes('--heap');

/** The short kinds: the bench's ioredis cells of the Mutex and the FairMutex. */
const shortKinds: Readonly<Record<string, string>> = {
  mutex: 'locksmith-mutex-ioredis',
  fair: 'locksmith-fair-ioredis',
};
const benchImpl = (kind: string) => impls.find((spec) => spec.id === (shortKinds[kind] ?? kind));
const quorumUrls: string[] = [];

function lockFor(kind: string, client: Redis, key: string): LockUnderTest {
  if (kind === 'reference') return referenceHandOff(client, key, TTL_MS);
  const spec = benchImpl(kind);
  if (spec) {
    // As a bench worker's clients, but only the ioredis ones (node-redis implementations are not
    // offered here): the quorum's connections are this client's own.
    const clients = {
      ioredis: client,
      ioredisFailFast: client,
      quorum: spec.servers === 3 ? quorumUrls.map((url) => new Redis(url)) : undefined,
    } as unknown as Clients;
    return spec.create(clients, key);
  }
  throw new Error(`unknown kind ${kind} (fair, mutex, reference, or a bench implementation id)`);
}

interface Run {
  /** acquire() or release() calls that threw, with their messages. */
  errors: string[];
  acquisitionsPerS: number;
  cpuUsPerAcquisition: number;
  heapBytesByFunction?: Map<string, number>;
}

async function runOnce(kind: string, url: string, runNo: number): Promise<Run> {
  const clients = Array.from({ length: clientCount }, () => new Redis(url));
  const key = `in-process:${kind}:${runNo}`;
  const locks = clients.map((client) => lockFor(kind, client, key));
  let acquisitions = 0;
  let stop = false;
  const errors: string[] = [];
  const loops = locks.map(async (lock, client) => {
    while (!stop) {
      try {
        const release = await lock.acquire();
        acquisitions += 1;
        await release();
      } catch (error) {
        // Counted and shown, not fatal: a lock that makes a waiter give up is a finding.
        errors.push(`client ${client}: ${(error as Error)?.message ?? String(error)}`);
      }
    }
  });
  await sleep(WARM_UP_MS);
  let session: Session | undefined;
  if (heap) {
    session = new Session();
    session.connect();
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 128,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }
  const countAtStart = acquisitions;
  const cpuAtStart = process.cpuUsage();
  const startedAt = performance.now();
  await sleep(windowMs);
  const cpu = process.cpuUsage(cpuAtStart);
  const elapsedS = (performance.now() - startedAt) / 1000;
  const counted = acquisitions - countAtStart;
  let heapBytesByFunction: Map<string, number> | undefined;
  if (session) {
    const { profile } = await session.post('HeapProfiler.getSamplingProfile');
    heapBytesByFunction = new Map();
    const walk = (node: typeof profile.head) => {
      const { functionName, url: file, lineNumber } = node.callFrame;
      const where = `${functionName || '(anonymous)'} ${file.replace(/^.*\/(node_modules|dist|src|bench)\//, '$1/')}:${lineNumber + 1}`;
      heapBytesByFunction?.set(where, (heapBytesByFunction.get(where) ?? 0) + node.selfSize / counted);
      for (const child of node.children) walk(child);
    };
    walk(profile.head);
    session.disconnect();
  }
  stop = true;
  await Promise.all(loops);
  for (const client of clients) client.disconnect();
  return {
    errors,
    acquisitionsPerS: counted / elapsedS,
    cpuUsPerAcquisition: (cpu.user + cpu.system) / counted,
    heapBytesByFunction,
  };
}

const server = await startRedis();
const quorumServers = kinds.some((kind) => benchImpl(kind)?.servers === 3)
  ? [server, await startRedis(), await startRedis()]
  : [];
quorumUrls.push(...quorumServers.map((s) => s.url));
try {
  console.log(
    `In-process hand-off cost: ${clientCount} clients on one lock, ${runs} runs of ${windowMs} ms per kind ` +
      `(after ${WARM_UP_MS} ms warm-up), Locksmith from ${locksmithSource}.`,
  );
  const results = new Map<string, Run[]>(kinds.map((kind) => [kind, []]));
  for (let run = 0; run < runs; run += 1) {
    for (const kind of kinds) results.get(kind)?.push(await runOnce(kind, server.url, run));
  }
  for (const [kind, kindRuns] of results) {
    const best = Math.min(...kindRuns.map((r) => r.cpuUsPerAcquisition));
    const fastest = Math.max(...kindRuns.map((r) => r.acquisitionsPerS));
    const errors = kindRuns.flatMap((r) => r.errors);
    console.log(
      `  ${kind.padEnd(10)} client CPU ${best.toFixed(1)} µs/acquisition (min of ${runs}), up to ${fastest.toFixed(0)} acquisitions/s` +
        (errors.length > 0 ? `, ${errors.length} ERRORS, first: ${errors[0]}` : ', no errors'),
    );
    const heapRun = kindRuns.find((r) => r.heapBytesByFunction);
    if (heapRun?.heapBytesByFunction) {
      const rows = [...heapRun.heapBytesByFunction].sort((a, b) => b[1] - a[1]);
      const total = rows.reduce((sum, [, bytes]) => sum + bytes, 0);
      console.log(`    allocated ~${total.toFixed(0)} B/acquisition (sampled); heaviest:`);
      for (const [where, bytes] of rows.slice(0, 12))
        console.log(`    ${bytes.toFixed(0).padStart(7)} B  ${where}`);
    }
  }
} finally {
  for (const extra of quorumServers.slice(1)) await extra.stop();
  await server.stop();
}
// The reference hand-off keeps one subscriber connection per client for the process's life (as the
// bench worker, which also ends with process.exit()): end here rather than wait on them.
process.exit(0);
