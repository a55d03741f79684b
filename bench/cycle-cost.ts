/**
 * The client cost of one uncontended cycle (acquire + release of a Mutex on one key, one ioredis
 * client), for comparing builds of Locksmith on a busy machine:
 *
 *   node --import tsx bench/cycle-cost.ts --lib=before/index.js,after/index.js \
 *     [--blocks=10] [--cycles=2000] [--kind=Mutex] [--top=N]
 *
 * A Redlock kind (`--kind=RedlockMutex`) runs over three servers, one client on each.
 *
 * Each `--lib` is a bundle of src/index.ts (`npm run build` makes dist/index.js; an esbuild bundle
 * of another checkout works the same), all loaded in this one process, each with its own client and
 * key. They run in alternating blocks of `--cycles` cycles, `--blocks` times over, so that the load
 * of the machine falls on all of them alike; the CPU of each block is measured with
 * process.cpuUsage. Printed per build: client CPU µs per cycle over all its blocks, the median of
 * its per-block ratio to the first build, and bytes allocated per cycle (a sampling heap profile of
 * a separate pass, collected objects included, as bench/cost-sheet.ts measures them); `--top=N`
 * lists the N sites that allocate most per cycle.
 */
import { basename, dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from '../tools/redis-server.js';
import { sampleAllocations } from './heap-sampling.js';

const option = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? undefined;
const libs = (option('lib') ?? new URL('../dist/index.js', import.meta.url).pathname).split(',');
const blocks = Number(option('blocks') ?? 10);
const cycles = Number(option('cycles') ?? 2_000);
const kind = option('kind') ?? 'Mutex';
const top = Number(option('top') ?? 0);

interface Build {
  readonly label: string;
  readonly cycle: () => Promise<void>;
  readonly clients: Redis[];
  /** Client CPU µs of each block. */
  readonly blockUs: number[];
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

const servers = await Promise.all(
  Array.from({ length: kind.startsWith('Redlock') ? 3 : 1 }, () => startRedis()),
);
const builds: Build[] = [];
try {
  for (const [i, lib] of libs.entries()) {
    const locksmith = await import(pathToFileURL(lib).href);
    const clients = servers.map((server) => new Redis(server.url));
    const target = kind.startsWith('Redlock') ? clients : clients[0];
    const lock = new locksmith[kind](target, `cycle-cost-${i}`, { ttlMs: 10_000 });
    const cycle = async () => {
      const lease = await lock.acquire();
      await lease.release();
    };
    builds.push({ label: `${basename(dirname(lib))}/${basename(lib)}`, cycle, clients, blockUs: [] });
  }
  for (const build of builds) for (let i = 0; i < 2_000; i += 1) await build.cycle(); // warm-up
  for (let block = 0; block < blocks; block += 1) {
    for (const build of builds) {
      const cpuAtStart = process.cpuUsage();
      for (let i = 0; i < cycles; i += 1) await build.cycle();
      const cpu = process.cpuUsage(cpuAtStart);
      build.blockUs.push(cpu.user + cpu.system);
    }
  }
  const first = builds[0] as Build;
  for (const build of builds) {
    const sampled = 2_000;
    const { bytes, bySite } = await sampleAllocations(async () => {
      for (let i = 0; i < sampled; i += 1) await build.cycle();
    });
    const us = build.blockUs.reduce((a, b) => a + b, 0) / (blocks * cycles);
    const ratio = median(build.blockUs.map((b, i) => b / (first.blockUs[i] as number)));
    console.log(
      `${kind} ${build.label}: ${us.toFixed(1)} µs client CPU/cycle (median block ratio to the first: ` +
        `${ratio.toFixed(3)}), ${(bytes / sampled).toFixed(0)} B/cycle`,
    );
    for (const [site, size] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${(size / sampled).toFixed(0).padStart(7)} B  ${site}`);
    }
  }
} finally {
  for (const build of builds) for (const client of build.clients) client.disconnect();
  for (const server of servers) await server.stop();
}
