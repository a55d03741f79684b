/**
 * What Redis executes per uncontended cycle, counted in instructions rather than timed: each
 * redis-server runs under `valgrind --tool=callgrind`, whose counts are the same run after run
 * whatever else the machine is doing (CPU µs on a shared 2-core machine move by ±30%).
 *
 *   node --import tsx bench/server-instructions.ts [--cycles=N] [--only=REGEX] [--blocks]
 *
 * Rows are the cost sheet's (bench/cost-rows.ts): one ioredis client cycling through 1,000 keys,
 * instructions per acquire + release summed over the servers (three for the Redlock kinds),
 * instrumentation on only for the measured cycles. `--blocks` adds what the parts of a script call
 * cost (an EVALSHA doing nothing; each KEY and ARGV; the commands and Lua operations the hot paths
 * use), the measure for shaping scripts. Needs valgrind (a Debian package, not installed by
 * `npm ci`); the kernel's share (sockets, the scheduler) is not counted, so this is not CPU time:
 * it is the part of it a script's shape decides.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type RedisServer, startRedis } from '../tools/redis-server.js';
import { rows } from './cost-rows.js';
import type { Clients, LockUnderTest } from './impls.js';
import { locksmithSource } from './locksmith.js';

const option = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? undefined;
const cycles = Number(option('cycles') ?? 2_000);
const keyCount = 1_000;
const only = option('only') ? new RegExp(option('only') as string) : undefined;

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  console.error('bench/server-instructions.ts needs valgrind (apt-get install valgrind)');
  process.exit(2);
}

/** A server under callgrind, counting only between `count()`'s start and end. */
interface CountedServer {
  readonly server: RedisServer;
  /** Instructions the server executed while `work` ran. */
  count(work: () => Promise<void>): Promise<number>;
}

const outDir = mkdtempSync(join(tmpdir(), 'locksmith-callgrind-'));

async function startCounted(index: number): Promise<CountedServer> {
  const outFile = join(outDir, `server-${index}.out`);
  const server = await startRedis({
    wrapper: ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${outFile}`],
  });
  const control = (...args: string[]) =>
    execFileSync('callgrind_control', [...args, String(server.pid)], { stdio: 'ignore' });
  let dumps = 0;
  return {
    server,
    async count(work) {
      control('--zero');
      control('--instr=on');
      await work();
      control('--instr=off');
      control('--dump');
      dumps += 1;
      // Each dump is its own file, `<out>.<n>`; its "totals:" line counts what ran since the zero.
      const text = readFileSync(`${outFile}.${dumps}`, 'utf8');
      return Number(/^totals: (\d+)/m.exec(text)?.[1] ?? Number.NaN);
    },
  };
}

const format = (n: number) => Math.round(n).toLocaleString('en-US');

const servers = [await startCounted(1), await startCounted(2), await startCounted(3)];
try {
  console.log(
    `Server instructions (callgrind) per uncontended acquire + release, one ioredis client, ` +
      `${keyCount.toLocaleString('en-US')} keys, ${cycles.toLocaleString('en-US')} cycles per row; Locksmith from ${locksmithSource}.`,
  );
  console.log('| kind | instructions / cycle |');
  console.log('|:--|--:|');
  for (const [runNo, row] of rows().entries()) {
    if (only && !only.test(row.label)) continue;
    const used = servers.slice(0, row.servers);
    const client = new Redis(used[0]?.server.url as string);
    const quorum = row.servers === 3 ? used.map((s) => new Redis(s.server.url)) : undefined;
    const clients = { ioredis: client, ioredisFailFast: client, quorum } as unknown as Clients;
    const locks = Array.from({ length: keyCount }, (_, i) => row.make(clients, `instr:${runNo}:${i}`));
    const cycle = async (i: number) => {
      const release = await (locks[i % keyCount] as LockUnderTest).acquire();
      await release();
    };
    try {
      for (let i = 0; i < 2 * keyCount; i += 1) await cycle(i); // warm-up: scripts loaded, keys made
      // Count every server over the same cycles: nest the counts, innermost runs the loop.
      const counted = await nestedCounts(used, async () => {
        for (let i = 0; i < cycles; i += 1) await cycle(i);
      });
      console.log(`| ${row.label} | ${format(counted.reduce((a, b) => a + b, 0) / cycles)} |`);
    } finally {
      for (const c of [client, ...(quorum ?? [])]) c.disconnect();
    }
  }
  if (process.argv.includes('--blocks')) await blocks(servers[0] as CountedServer);
} finally {
  for (const { server } of servers) await server.stop();
  if (!process.env.KEEP_CALLGRIND) rmSync(outDir, { recursive: true, force: true });
}
process.exit(0);

async function nestedCounts(used: CountedServer[], work: () => Promise<void>): Promise<number[]> {
  const [first, ...rest] = used;
  if (!first) {
    await work();
    return [];
  }
  let inner: number[] = [];
  const own = await first.count(async () => {
    inner = await nestedCounts(rest, work);
  });
  return [own, ...inner];
}

/**
 * The parts of a script call: what the hot paths' shape pays for. Each part is an EVALSHA of a
 * one-line script over 1,000 keys, against the bare call (`return 1`) with the same KEYS and ARGV;
 * the KEYS and ARGV rows are against the bare call without any.
 */
async function blocks({ server, count }: CountedServer): Promise<void> {
  const client = new Redis(server.url);
  const perCall = async (source: string, keys: number, args: string[]) => {
    const sha = (await client.script('LOAD', source)) as string;
    const call = (i: number) =>
      client.evalsha(
        sha,
        keys,
        ...Array.from({ length: keys }, (_, k) => `block:${k}:${i % keyCount}`),
        ...args,
      );
    for (let i = 0; i < 500; i += 1) await call(i);
    const n = 2_000;
    const total = await count(async () => {
      for (let i = 0; i < n; i += 1) await call(i);
    });
    return total / n;
  };
  const args8 = ['token', '30000', '9999', 'channel', '0', '1', 'label', '0'];
  const big = "'1795963153795042'";
  const parts: [string, string, number, string[]][] = [
    ['TIME', "redis.call('time') return 1", 0, []],
    ['GET', "redis.call('get', KEYS[1]) return 1", 1, []],
    ['SET', "redis.call('set', KEYS[1], ARGV[1]) return 1", 1, ['v']],
    ['SET … PX 30000 (a number)', "redis.call('set', KEYS[1], ARGV[1], 'PX', 30000) return 1", 1, ['v']],
    ['SET … PX "30000" (a string)', "redis.call('set', KEYS[1], ARGV[1], 'PX', '30000') return 1", 1, ['v']],
    ['4 × tonumber(16 digits)', `local n = 0 for i = 1, 4 do n = n + tonumber(${big}) end return 1`, 0, []],
    ['4 × (16 digits) + 0', `local n = 0 for i = 1, 4 do n = n + (${big} + 0) end return 1`, 0, []],
    [
      'string.format of 6 × %d',
      "local s = string.format('%d|%d|%d|%d|%d|%d|', 1, 2, 3, 4, 5, 6) return 1",
      0,
      [],
    ],
    [
      '10 local functions defined',
      `${Array.from({ length: 10 }, (_, i) => `local function f${i}(a) return a end`).join(' ')} return 1`,
      0,
      [],
    ],
  ];
  const bare = await perCall('return 1', 0, []);
  console.log('\n| part of a script call | instructions / call | the part alone |');
  console.log('|:--|--:|--:|');
  console.log(`| EVALSHA of \`return 1\`, no KEYS or ARGV | ${format(bare)} | |`);
  const fourKeys = await perCall('return 1', 4, []);
  console.log(`| the same with 4 KEYS | ${format(fourKeys)} | ${format((fourKeys - bare) / 4)} per KEY |`);
  const eightArgs = await perCall('return 1', 0, args8);
  console.log(`| the same with 8 ARGV | ${format(eightArgs)} | ${format((eightArgs - bare) / 8)} per ARGV |`);
  for (const [label, source, keys, args] of parts) {
    const withPart = await perCall(source, keys, args);
    const without = await perCall('return 1', keys, args);
    console.log(`| ${label} | ${format(withPart)} | ${format(withPart - without)} |`);
  }
  client.disconnect();
}
