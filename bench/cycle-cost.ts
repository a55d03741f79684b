/**
 * The client cost of one uncontended Mutex cycle (acquire + release on one key, one ioredis client),
 * for comparing two builds of Locksmith on a busy machine: run each build in turn, several times
 * over, and compare the ratios rather than the absolute figures.
 *
 *   node bench/cycle-cost.ts is not how it runs; with tsx:
 *   node --import tsx bench/cycle-cost.ts --lib=/path/to/index.js [--cycles=20000] [--kind=Mutex]
 *
 * `--lib` is a bundle of src/index.ts (`npm run build` makes dist/index.js; an esbuild bundle of
 * another checkout works the same). It prints one line: client CPU µs per cycle (process.cpuUsage
 * over the timed pass) and bytes allocated per cycle (a sampling heap profile of a second pass,
 * collected objects included, as bench/cost-sheet.ts measures them).
 */
import { Session } from 'node:inspector/promises';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from '../tools/redis-server.js';

const option = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? undefined;
const lib = option('lib') ?? new URL('../dist/index.js', import.meta.url).pathname;
const cycles = Number(option('cycles') ?? 20_000);
const kind = option('kind') ?? 'Mutex';
const top = Number(option('top') ?? 0);

const locksmith = await import(pathToFileURL(lib).href);
const server = await startRedis();
const client = new Redis(server.url);
try {
  const lock = new locksmith[kind](client, 'cycle-cost', { ttlMs: 10_000 });
  const cycle = async () => {
    const lease = await lock.acquire();
    await lease.release();
  };
  for (let i = 0; i < 2_000; i += 1) await cycle(); // warm-up: JIT, the script cache
  const cpuAtStart = process.cpuUsage();
  const startedAt = performance.now();
  for (let i = 0; i < cycles; i += 1) await cycle();
  const elapsedMs = performance.now() - startedAt;
  const cpu = process.cpuUsage(cpuAtStart);

  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 256,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  const sampled = 2_000;
  for (let i = 0; i < sampled; i += 1) await cycle();
  const { profile } = await session.post('HeapProfiler.getSamplingProfile');
  await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  let bytes = 0;
  const bySite = new Map<string, number>();
  const walk = (node: typeof profile.head) => {
    bytes += node.selfSize;
    const { functionName, url, lineNumber } = node.callFrame;
    const site = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  // --top=N: the N sites that allocated most, per cycle.
  for (const [site, size] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(size / sampled).toFixed(0).padStart(7)} B  ${site}`);
  }

  const us = (cpu.user + cpu.system) / cycles;
  console.log(
    `${kind} ${lib}: ${us.toFixed(1)} µs client CPU/cycle, ${(bytes / sampled).toFixed(0)} B/cycle, ` +
      `${((cycles / elapsedMs) * 1000).toFixed(0)} cycles/s`,
  );
} finally {
  client.disconnect();
  await server.stop();
}
