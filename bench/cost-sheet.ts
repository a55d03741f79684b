/**
 * The cost sheet (docs/design.md, "What an uncontended cycle costs"): what one uncontended acquire +
 * release of each lock kind costs, beside the peers of its kind, measured in ONE process with one
 * ioredis client cycling through 1,000 independent keys (never contended, so every cycle takes the
 * free-lock path users mostly see):
 *
 *   node --import tsx bench/cost-sheet.ts [--cycles=N] [--keys=1000] [--only=REGEX]
 *
 * For every row: cycles/s of the sequential loop, Redis calls per cycle by name (INFO commandstats:
 * a script's own redis.call()s count, as does EVALSHA), Redis CPU per cycle (INFO cpu, summed over
 * the servers: three for Redlock), client CPU per cycle (process.cpuUsage) and bytes the client
 * allocated per cycle (a sampling heap profile of a separate, shorter pass, collected objects
 * included). Locksmith's kinds come from the lock-kind registry; `npm run bench` prints the same
 * Redis figures per kind beside the fastest peer of the contended cells. Locksmith is loaded from
 * dist/ when built (`npm run build`), as users run it.
 */
import { Redis } from 'ioredis';
import { type RedisServer, startRedis } from '../tools/redis-server.js';
import { type Row, rows } from './cost-rows.js';
import { sampleAllocations } from './heap-sampling.js';
import type { Clients, LockUnderTest } from './impls.js';
import { locksmithSource } from './locksmith.js';
import { commandCalls, redisCpuUs } from './redis-stats.js';

const option = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? undefined;
const cycles = Number(option('cycles') ?? 5_000);
const keyCount = Number(option('keys') ?? 1_000);
const only = option('only') ? new RegExp(option('only') as string) : undefined;

interface Figures {
  cyclesPerS: number;
  calls: Record<string, number>;
  redisCpuUs: number;
  clientCpuUs: number;
  allocatedBytes: number;
}

async function measure(row: Row, servers: RedisServer[], runNo: number): Promise<Figures> {
  const used = servers.slice(0, row.servers);
  const admins = used.map((s) => new Redis(s.url));
  const client = new Redis(used[0]?.url as string);
  const quorum = row.servers === 3 ? used.map((s) => new Redis(s.url)) : undefined;
  const clients = { ioredis: client, ioredisFailFast: client, quorum } as unknown as Clients;
  const locks = Array.from({ length: keyCount }, (_, i) => row.make(clients, `cost:${runNo}:${i}`));
  const cycle = async (i: number) => {
    const release = await (locks[i % keyCount] as LockUnderTest).acquire();
    await release();
  };
  try {
    for (let i = 0; i < Math.min(cycles, 2 * keyCount); i += 1) await cycle(i); // warm-up: JIT, scripts
    await Promise.all(admins.map((a) => a.config('RESETSTAT')));
    const redisAtStart = await Promise.all(admins.map(redisCpuUs));
    const cpuAtStart = process.cpuUsage();
    const startedAt = performance.now();
    for (let i = 0; i < cycles; i += 1) await cycle(i);
    const elapsedMs = performance.now() - startedAt;
    const cpu = process.cpuUsage(cpuAtStart);
    const redisAtEnd = await Promise.all(admins.map(redisCpuUs));
    const calls: Record<string, number> = {};
    for (const admin of admins) {
      for (const [name, count] of Object.entries(await commandCalls(admin))) {
        calls[name] = (calls[name] ?? 0) + count / cycles;
      }
    }
    // Allocation, in a separate pass: the sampling profiler slows what it watches.
    const sampled = Math.min(cycles, 1_000);
    const { bytes } = await sampleAllocations(async () => {
      for (let i = 0; i < sampled; i += 1) await cycle(i);
    });
    return {
      cyclesPerS: (cycles / elapsedMs) * 1000,
      calls,
      redisCpuUs: redisAtEnd.reduce((sum, end, i) => sum + end - (redisAtStart[i] as number), 0) / cycles,
      clientCpuUs: (cpu.user + cpu.system) / cycles,
      allocatedBytes: bytes / sampled,
    };
  } finally {
    for (const c of [client, ...admins, ...(quorum ?? [])]) c.disconnect();
  }
}

const servers = [await startRedis(), await startRedis(), await startRedis()];
try {
  console.log(
    `Cost sheet: one uncontended acquire + release, one process, one ioredis client, ${keyCount.toLocaleString('en-US')} keys, ` +
      `${cycles.toLocaleString('en-US')} cycles per row after a warm-up; Locksmith from ${locksmithSource}.`,
  );
  console.log(
    '| kind | cycles/s | Redis calls / cycle | by command | Redis CPU µs | client CPU µs | allocated B |',
  );
  console.log('|:--|--:|--:|:--|--:|--:|--:|');
  for (const [runNo, row] of rows().entries()) {
    if (only && !only.test(row.label)) continue;
    const f = await measure(row, servers, runNo);
    const total = Object.values(f.calls).reduce((a, b) => a + b, 0);
    const byName = Object.entries(f.calls)
      .filter(([, n]) => n >= 0.005)
      .sort((a, b) => b[1] - a[1])
      .map(([name, n]) => `${name} ${Number(n.toFixed(2))}`)
      .join(', ');
    console.log(
      `| ${row.label} | ${f.cyclesPerS.toFixed(0)} | ${total.toFixed(1)} | ${byName} | ${f.redisCpuUs.toFixed(0)} | ` +
        `${f.clientCpuUs.toFixed(0)} | ${f.allocatedBytes.toFixed(0)} |`,
    );
  }
} finally {
  for (const server of servers) await server.stop();
}
// Some peers keep connections (subscribers, timers) for the process's life: end here.
process.exit(0);
