/**
 * `npm run bench` (full run) and `npm run bench -- --quick` (smoke run: every implementation at 1 and 10 clients; docs/performance.md says how long each takes).
 *
 * Starts its own redis-server through the test fixture (or uses REDIS_URL), forks one worker process
 * per client, and runs every lock configuration at 1, 2, 5 and 10 clients with an empty and a 1 ms
 * critical section. Between cells it resets INFO commandstats (CONFIG RESETSTAT). Then it measures
 * the uncontended cost (one process cycling 1,000 independent keys) and the server's own EVALSHA
 * ceiling with redis-benchmark, prints the book-style table and the full table, and writes JSON to
 * bench/results/. A full run (no --quick, no --only) ends with the cost sheet (bench/cost-sheet.ts):
 * each kind's cost per uncontended cycle beside its fastest peers.
 *
 * Then the P × C cells (issue #23): P processes, each running C acquire loops at once on the same
 * key through one lock object per process (as each implementation creates it), for Locksmith's Mutex
 * and the fastest peers (`PXC_DEFAULT_IMPLS`; with --only, every implementation it selects).
 *
 * Options: --quick (a smoke run: each cell one 250 ms window, no warm-up), --duration-ms=N (each
 * cell's measured window; 5,000), --warmup-ms=N (unmeasured run before each cell's window; 1,000),
 * --clients=1,2,5,10 (`none`: no N × 1 cells, nor the uncontended table),
 * --pxc=4x25,2x50 (the P × C cells; 4x25 with --quick; `none`: no P × C cells), --cs-ms=0,1,
 * --only=REGEX (implementation ids),
 * --reverse (run the implementations in reverse order: cells that run later are measured on warmer
 * worker processes, so swapping the order shows how much of a gap is the order's),
 * --cpu-prof-dir=DIR (a V8 CPU profile per worker process).
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { scripts } from '../src/protocol/scripts.js';
import { type RedisServer, startRedis } from '../tools/redis-server.js';
import { writeCharts } from './charts.js';
import { type ImplSpec, impls, PXC_DEFAULT_IMPLS } from './impls.js';
import { printKindCosts } from './kind-costs.js';
import { locksmithSource } from './locksmith.js';
import { type CellResult, STAMP_FIELDS, type ToParent, type ToWorker } from './protocol.js';
import { commandCalls, redisCpuUs } from './redis-stats.js';
import { printRedlockTargets } from './redlock-targets.js';
import { printSemaphoreTargets } from './semaphore-targets.js';
import { type Acquisition, jainIndex, orderStats, percentile } from './stats.js';

const here = dirname(fileURLToPath(import.meta.url));

interface Config {
  quick: boolean;
  durationMs: number;
  /** Unmeasured run before each cell's window (JIT, connections, subscriptions). */
  warmupMs: number;
  clientCounts: number[];
  /** The P × C cells: P processes × C acquirers each, on one key. */
  pxc: { processes: number; acquirers: number }[];
  csMs: number[];
  only: RegExp | undefined;
  /** Run the implementations in reverse order (`--reverse`). */
  reverse: boolean;
  multiKeyDurationMs: number;
  benchmarkRequests: number;
  /** Where workers write CPU profiles (`--cpu-prof-dir=DIR`); none by default. */
  cpuProfDir: string | undefined;
}

function parseArgs(argv: string[]): Config {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const none = (name: string) => value(name) === 'none' || value(name) === '';
  const list = (name: string) => (none(name) ? [] : value(name)?.split(',').map(Number));
  const quick = argv.includes('--quick');
  const pxc = (none('pxc') ? [] : (value('pxc')?.split(',') ?? (quick ? ['4x25'] : ['4x25', '2x50']))).map(
    (cell) => {
      const [processes, acquirers] = cell.split(/[x×]/).map(Number);
      if (!Number.isInteger(processes) || !Number.isInteger(acquirers) || !processes || !acquirers)
        throw new Error(`--pxc: ${cell} is not PxC (e.g. 4x25)`);
      return { processes, acquirers };
    },
  );
  return {
    quick,
    // The smoke run (CI) proves every cell runs, without errors or violations: one short window each.
    durationMs: Number(value('duration-ms') ?? (quick ? 250 : 5_000)),
    warmupMs: Number(value('warmup-ms') ?? (quick ? 0 : 1_000)),
    clientCounts: list('clients') ?? (quick ? [1, 10] : [1, 2, 5, 10]),
    pxc,
    csMs: list('cs-ms') ?? (quick ? [0] : [0, 1]),
    only: value('only') ? new RegExp(value('only') as string) : undefined,
    reverse: argv.includes('--reverse'),
    multiKeyDurationMs: quick ? 250 : 3_000,
    benchmarkRequests: quick ? 20_000 : 200_000,
    cpuProfDir: value('cpu-prof-dir'),
  };
}

class Worker {
  private readonly queue: ToParent[] = [];
  private waiting: ((message: ToParent) => void) | undefined;
  constructor(readonly child: ChildProcess) {
    child.on('message', (message: ToParent) => {
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = undefined;
        w(message);
      } else this.queue.push(message);
    });
  }
  send(message: ToWorker): void {
    this.child.send(message);
  }
  async next<T extends ToParent['type']>(type: T): Promise<Extract<ToParent, { type: T }>> {
    const message = this.queue.shift() ?? (await new Promise<ToParent>((r) => (this.waiting = r)));
    if (message.type === 'failed') throw new Error(`worker failed: ${message.message}`);
    if (message.type !== type) throw new Error(`expected ${type} from worker, got ${message.type}`);
    return message as Extract<ToParent, { type: T }>;
  }
}

function spawnWorker(url: string, redlockUrls: string[], config: Config): Worker {
  const { cpuProfDir, quick } = config;
  const child = fork(join(here, 'worker.ts'), [], {
    execArgv: ['--import', 'tsx'],
    // --cpu-prof-dir=DIR: each worker profiles each contended cell's measured window (worker.ts).
    env: {
      ...process.env,
      BENCH_REDIS_URL: url,
      ...(redlockUrls.length > 0 ? { BENCH_REDLOCK_URLS: redlockUrls.join(',') } : {}),
      ...(cpuProfDir ? { BENCH_CPU_PROF_DIR: cpuProfDir } : {}),
      // A smoke run measures nothing: a peer's stuck calls are waited for briefly (worker.ts).
      ...(quick ? { BENCH_ABANDONED_WAIT_MS: '3000' } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Worker(child);
}

/** Busy and total jiffies of the whole machine (every process, ours and anyone else's). */
function machineJiffies(): { busy: number; total: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    const total = values.reduce((a, b) => a + b, 0);
    const idle = (values[3] ?? 0) + (values[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

export interface Cell {
  impl: string;
  label: string;
  family: ImplSpec['family'];
  tuned: boolean;
  /** Holders it admits at once (1: a lock; more: a semaphore). */
  limit: number;
  /** Independent Redis servers it locks across (3: a Redlock cell). */
  servers: number;
  /** Client processes. */
  clients: number;
  /** Acquire loops per process, all on one lock object (1 in the N × 1 cells, C in the P × C cells). */
  acquirersPerProcess: number;
  csMs: number;
  durationS: number;
  acquisitions: number;
  acquisitionsPerS: number;
  triesPerS: number;
  roundTripsPerAcquisition: number;
  redisCommandsPerAcquisition: number;
  /** The same, by command (INFO commandstats), e.g. { evalsha: 2, get: 3, ... }. */
  redisCommandsByName: Record<string, number>;
  waitMs: { p50: number; p99: number; p999: number; max: number };
  /** Share of acquisitions to the acquirer that held the lock just before. */
  sameHolderShare: number;
  /** Share of acquisitions to the process that held the lock just before (= `sameHolderShare` in N × 1). */
  sameProcessShare: number;
  overtakenShare: number;
  /** Acquisitions per acquirer (per client in N × 1), fewest and most. */
  perClient: { min: number; max: number };
  /** Jain's index over the acquirers' acquisitions. */
  jain: number;
  /** Jain's index over the processes' acquisitions (= `jain` in N × 1). */
  jainProcesses: number;
  errors: number;
  errorSamples: string[];
  /** Acquirers (clients in N × 1) still inside `acquire()` `STUCK_AFTER_MS` after the window ended. */
  stuckClients: number;
  violations: number;
  /** CPU time per acquisition: all client processes together, and the Redis server, µs. */
  cpuUsPerAcquisition: { clients: number; redis: number };
  /** Cores the whole machine kept busy during the cell (ours and other processes'), of `cores`. */
  machineBusyCores: number;
  /** A read-write lock's cell: readers, each side's acquisitions/s, writer sections that overlapped another. */
  readWrite?: { readers: number; readerAcqPerS: number; writerAcqPerS: number; writerOverlaps: number };
}

async function runCell(
  workers: Worker[],
  admins: readonly Redis[],
  spec: ImplSpec,
  clients: number,
  acquirers: number,
  csMs: number,
  durationMs: number,
  warmupMs: number,
  cellNo: number,
): Promise<Cell> {
  const used = workers.slice(0, clients);
  const key = `bench:${cellNo}:${spec.id}`;
  for (const w of used) w.send({ type: 'prepare', implId: spec.id, key, csMs, acquirers });
  for (const w of used) await w.next('ready');
  const warmFrom = Date.now() + 100;
  const startAt = warmFrom + warmupMs;
  const endAt = startAt + durationMs;
  for (const w of used) w.send({ type: 'go', warmFrom, startAt, endAt });
  // Server-side counters start with the measured window (the workers' warm-up runs before it).
  await sleep(Math.max(0, startAt - Date.now()));
  // A Redlock cell's commands and Redis CPU are those of its three servers together.
  const servers = admins.slice(0, spec.servers ?? 1);
  for (const admin of servers) await admin.config('RESETSTAT');
  const redisCpuBefore = await sumOver(servers, redisCpuUs);
  const jiffiesBefore = machineJiffies();
  // ... and end with it, as the workers' counters do: the acquisitions still under way at its end (up
  // to one per acquirer, a hundred in a P × C cell) and any stuck caller's retries are not counted.
  await sleep(Math.max(0, endAt - Date.now()));
  const commands: Record<string, number> = {};
  for (const admin of servers) {
    for (const [name, calls] of Object.entries(await commandCalls(admin))) {
      commands[name] = (commands[name] ?? 0) + calls;
    }
  }
  const redisCpu = (await sumOver(servers, redisCpuUs)) - redisCpuBefore;
  const jiffiesAfter = machineJiffies();
  const busyShare = (jiffiesAfter.busy - jiffiesBefore.busy) / (jiffiesAfter.total - jiffiesBefore.total);
  const results: CellResult[] = [];
  for (const w of used) results.push((await w.next('result')).result);

  // Acquirer a of process p is acquirer p × acquirers + a of the cell.
  const acquisitions: Acquisition[] = [];
  const counts = new Array<number>(clients * acquirers).fill(0);
  const processCounts = results.map((r) => r.stamps.length / STAMP_FIELDS);
  results.forEach((r, process) => {
    for (let i = 0; i < r.stamps.length; i += STAMP_FIELDS) {
      const client = process * acquirers + (r.stamps[i] as number);
      counts[client] = (counts[client] ?? 0) + 1;
      acquisitions.push({
        client,
        process,
        calledAt: r.stamps[i + 1] as number,
        enteredAt: r.stamps[i + 2] as number,
        leftAt: r.stamps[i + 3] as number,
      });
    }
  });
  const n = acquisitions.length;
  const durationS = durationMs / 1000;
  const waits = acquisitions.map((a) => (a.enteredAt - a.calledAt) / 1000).sort((a, b) => a - b);
  const order = orderStats(acquisitions, spec.limit ?? 1);
  const readWrite = spec.readWrite ? readWriteStats(acquisitions, results, durationS) : undefined;
  const sum = (f: (r: CellResult) => number) => results.reduce((a, r) => a + f(r), 0);
  return {
    impl: spec.id,
    label: spec.label,
    family: spec.family,
    tuned: spec.tuned ?? false,
    limit: spec.limit ?? 1,
    servers: spec.servers ?? 1,
    clients,
    acquirersPerProcess: acquirers,
    csMs,
    durationS,
    acquisitions: n,
    acquisitionsPerS: n / durationS,
    triesPerS: sum((r) => r.tries) / durationS,
    roundTripsPerAcquisition: sum((r) => r.roundTrips) / n,
    redisCommandsPerAcquisition: Object.values(commands).reduce((a, b) => a + b, 0) / n,
    redisCommandsByName: Object.fromEntries(
      Object.entries(commands).map(([name, calls]) => [name, calls / n]),
    ),
    waitMs: {
      p50: percentile(waits, 50),
      p99: percentile(waits, 99),
      p999: percentile(waits, 99.9),
      max: waits.at(-1) ?? Number.NaN,
    },
    sameHolderShare: order.sameHolderShare,
    sameProcessShare: order.sameProcessShare,
    overtakenShare: order.overtakenShare,
    perClient: { min: Math.min(...counts), max: Math.max(...counts) },
    jain: jainIndex(counts),
    jainProcesses: jainIndex(processCounts),
    errors: sum((r) => r.errors),
    errorSamples: results.flatMap((r) => r.errorSamples).slice(0, 3),
    stuckClients: sum((r) => r.stuckAcquirers),
    violations: order.violations + (readWrite?.writerOverlaps ?? 0),
    ...(readWrite ? { readWrite } : {}),
    cpuUsPerAcquisition: { clients: sum((r) => r.cpuUs) / n, redis: redisCpu / n },
    machineBusyCores: busyShare * cpus().length,
  };
}

async function sumOver(admins: readonly Redis[], read: (admin: Redis) => Promise<number>): Promise<number> {
  let sum = 0;
  for (const admin of admins) sum += await read(admin);
  return sum;
}

/** Per side of a read-write cell: acquisitions/s, and writer sections that overlapped any other. */
function readWriteStats(
  acquisitions: readonly Acquisition[],
  results: readonly CellResult[],
  durationS: number,
) {
  const isWriter = (a: Acquisition) => results[a.process ?? a.client]?.role === 'write';
  const writes = acquisitions.filter(isWriter);
  const writerOverlaps = writes.filter((w) =>
    acquisitions.some((o) => o !== w && o.enteredAt < w.leftAt && w.enteredAt < o.leftAt),
  ).length;
  return {
    readers: results.filter((r) => r.role === 'read').length,
    readerAcqPerS: (acquisitions.length - writes.length) / durationS,
    writerAcqPerS: writes.length / durationS,
    writerOverlaps,
  };
}

function redisBenchmark(server: { host: string; port: number }, requests: number): number | undefined {
  try {
    const output = execFileSync(
      'redis-benchmark',
      [
        '-h',
        server.host,
        '-p',
        String(server.port),
        '-c',
        '50',
        '-n',
        String(requests),
        '-r',
        '100000',
        '-q',
        'EVALSHA',
        scripts.handOffAcquire.sha1,
        '4',
        'bench:rb:__rand_int__',
        'bench:rb:fence',
        'bench:rb:queue',
        'bench:rb:waiting',
        'redis-benchmark',
        '1000',
        '0',
        'bench:rb:granted',
        '0',
        '1',
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const match = /([\d.]+) requests per second/.exec(output.split('\r').at(-1) ?? output);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

const fmt = (value: number, digits = 0) =>
  Number.isFinite(value)
    ? value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '–';
const pct = (value: number) => (Number.isFinite(value) ? `${(value * 100).toFixed(1)}%` : '–');

function table(header: string[], rows: string[][], rightFrom = 1): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i >= rightFrom ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i >= rightFrom ? `${'-'.repeat(w + 1)}:` : `:${'-'.repeat(w + 1)}`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

async function main(): Promise<void> {
  const config = parseArgs(process.argv.slice(2));
  const startedAt = Date.now();
  let server: RedisServer | undefined;
  let url = process.env.REDIS_URL;
  if (!url) {
    server = await startRedis();
    url = server.url;
  }
  const parsed = new URL(url);
  const target = { host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || 6379) };
  const admin = new Redis(url);
  const matching = impls.filter((s) => !config.only || config.only.test(s.id));
  const selected = config.reverse ? matching.reverse() : matching;
  // The Redlock cells lock across three servers: this one and two more, started here.
  const extraServers: RedisServer[] = [];
  if (selected.some((s) => s.servers === 3)) {
    for (let i = 0; i < 2; i += 1) extraServers.push(await startRedis());
  }
  const redlockUrls = extraServers.length > 0 ? [url, ...extraServers.map((s) => s.url)] : [];
  const admins = [admin, ...extraServers.map((s) => new Redis(s.url))];
  const maxClients = Math.max(1, ...config.clientCounts, ...config.pxc.map((c) => c.processes));
  const workers = Array.from({ length: maxClients }, () => spawnWorker(url as string, redlockUrls, config));
  try {
    for (const w of workers) await w.next('ready');
    const serverInfo = await admin.info('server');
    const machine = {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      os: `${process.platform} ${release()}`,
      node: process.version,
      redis: /redis_version:(\S+)/.exec(serverInfo)?.[1] ?? 'unknown',
      redisUrl: process.env.REDIS_URL ? 'REDIS_URL' : 'embedded redis-server (loopback)',
    };
    console.log(
      `Locksmith benchmark${config.quick ? ' (quick)' : ''}: ${machine.cores} × ${machine.cpu}, ${machine.os}, Node ${machine.node}, Redis ${machine.redis}; ` +
        `${config.durationMs / 1000} s per cell after ${config.warmupMs / 1000} s of warm-up, each client its own process, TTL 10 s; Locksmith from ` +
        (locksmithSource === 'dist' ? 'dist/ (the built package).' : 'src/ through tsx (not built: slower).'),
    );

    const cells: Cell[] = [];
    let cellNo = 0;
    for (const spec of selected.filter((s) => !s.uncontendedOnly && !s.pxcOnly)) {
      for (const csMs of config.csMs) {
        for (const clients of config.clientCounts) {
          cellNo += 1;
          const cell = await runCell(
            workers,
            admins,
            spec,
            clients,
            1,
            csMs,
            config.durationMs,
            config.warmupMs,
            cellNo,
          );
          cells.push(cell);
          console.log(
            `  ${spec.id.padEnd(28)} ${String(clients).padStart(2)} clients, cs ${csMs} ms: ${fmt(cell.acquisitionsPerS)} acq/s, ` +
              `${fmt(cell.roundTripsPerAcquisition, 2)} rt/acq, p99 ${fmt(cell.waitMs.p99, 2)} ms, errors ${cell.errors}, stuck ${cell.stuckClients}, violations ${cell.violations}` +
              (cell.readWrite
                ? `; ${cell.readWrite.readers} readers ${fmt(cell.readWrite.readerAcqPerS)} acq/s, 1 writer ${fmt(cell.readWrite.writerAcqPerS)} acq/s`
                : ''),
          );
        }
      }
    }

    // P × C: P processes, C acquire loops each, one key.
    const pxcCells: Cell[] = [];
    const pxcImpls = selected.filter(
      (s) => !s.uncontendedOnly && !s.readWrite && (config.only ? true : PXC_DEFAULT_IMPLS.has(s.id)),
    );
    for (const spec of pxcImpls) {
      for (const csMs of config.csMs) {
        for (const { processes, acquirers } of config.pxc) {
          cellNo += 1;
          const cell = await runCell(
            workers,
            admins,
            spec,
            processes,
            acquirers,
            csMs,
            config.durationMs,
            config.warmupMs,
            cellNo,
          );
          pxcCells.push(cell);
          console.log(
            `  ${spec.id.padEnd(36)} ${processes}×${acquirers}, cs ${csMs} ms: ${fmt(cell.acquisitionsPerS)} acq/s, ` +
              `${fmt(cell.roundTripsPerAcquisition, 2)} rt/acq, p99 ${fmt(cell.waitMs.p99, 2)} ms, Jain ${fmt(cell.jain, 3)}/${fmt(cell.jainProcesses, 3)}, ` +
              `errors ${cell.errors}, stuck ${cell.stuckClients}, violations ${cell.violations}`,
          );
        }
      }
    }

    // Uncontended: one process, 1,000 independent keys, each with its own acquire/release loop.
    const multiKey: {
      impl: string;
      label: string;
      cyclesPerS: number;
      roundTripsPerCycle: number;
      errors: number;
    }[] = [];
    // Not the Redlock cells (their 1,000 keys would be spread over three servers), nor read-write ones.
    // Skipped with --clients=none (a run of the P × C cells alone).
    const multiKeyImpls = selected.filter(
      (s) =>
        config.clientCounts.length > 0 &&
        !s.tuned &&
        !s.pxcOnly &&
        (s.servers ?? 1) === 1 &&
        !s.readWrite &&
        (!config.quick || s.family === 'locksmith'),
    );
    for (const spec of multiKeyImpls) {
      const w = workers[0] as Worker;
      w.send({
        type: 'multikey',
        implId: spec.id,
        keys: 1_000,
        prefix: `bench:mk:${spec.id}`,
        durationMs: config.multiKeyDurationMs,
      });
      const r = await w.next('multikey-result');
      multiKey.push({
        impl: spec.id,
        label: spec.label,
        cyclesPerS: r.cycles / (r.elapsedMs / 1000),
        roundTripsPerCycle: r.roundTrips / r.cycles,
        errors: r.errors,
      });
    }
    await admin.script('LOAD', scripts.handOffAcquire.source);
    const evalshaCeiling =
      config.clientCounts.length > 0 ? redisBenchmark(target, config.benchmarkRequests) : undefined;

    if (cells.length > 0) printReport(cells, multiKey, evalshaCeiling, config);
    printPxc(pxcCells);
    const file = join(
      here,
      'results',
      `bench-${new Date(startedAt).toISOString().replace(/[:.]/g, '-')}${config.quick ? '-quick' : ''}.json`,
    );
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(
      file,
      `${JSON.stringify({ startedAt: new Date(startedAt).toISOString(), config: { ...config, only: config.only?.source }, machine, cells, pxcCells, multiKey, evalshaCeiling }, null, 2)}\n`,
    );
    // The charts beside the JSON, in a folder of the run's name (bench/charts.ts).
    const chartFiles = writeCharts(
      { startedAt: new Date(startedAt).toISOString(), cells, pxcCells },
      file.replace(/\.json$/, ''),
    );
    console.log(`\nCharts: ${chartFiles.join(', ')}`);
    // The cost budget of the full run: client and Redis µs, Redis calls and bytes allocated per
    // uncontended cycle, each kind beside its fastest peers (bench/cost-sheet.ts, its own server).
    if (!config.quick && !config.only && config.clientCounts.length > 0) {
      console.log('');
      execFileSync(process.execPath, ['--import', 'tsx', join(here, 'cost-sheet.ts')], { stdio: 'inherit' });
    }
    console.log(`\nJSON: ${file}\nTotal time ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  } finally {
    for (const w of workers) {
      if (w.child.connected) w.send({ type: 'exit' });
    }
    for (const a of admins) a.disconnect();
    await server?.stop();
    for (const extra of extraServers) await extra.stop();
  }
}

function printReport(
  cells: Cell[],
  multiKey: { impl: string; label: string; cyclesPerS: number; roundTripsPerCycle: number; errors: number }[],
  evalshaCeiling: number | undefined,
  config: Config,
): void {
  const per10s = (perS: number) => fmt(perS * 10);
  console.log(
    '\nBook-style table (Table 11.2): tries and acquisitions per 10 seconds, empty critical section',
  );
  console.log(
    table(
      ['Benchmark configuration', 'Tries in 10 s', 'Acquires in 10 s'],
      cells
        .filter((c) => c.csMs === 0)
        .map((c) => [
          `${c.label}, ${c.clients} client${c.clients > 1 ? 's' : ''}`,
          per10s(c.triesPerS),
          per10s(c.acquisitionsPerS),
        ]),
    ),
  );
  console.log(
    '\nFull table (wait = time in acquire(), ms; prev = share to the previous holder; overtaken = granted after a later caller)',
  );
  console.log(
    table(
      [
        'implementation',
        'n',
        'cs ms',
        'acq/s',
        'tries/s',
        'rt/acq',
        'cmds/acq',
        'p50',
        'p99',
        'p99.9',
        'max',
        'prev',
        'overtaken',
        'min..max/client',
        'Jain',
        'errors',
        'stuck',
        'viol.',
        'cpu µs/acq cl+redis',
        'busy cores',
      ],
      cells.map((c) => [
        c.impl,
        String(c.clients),
        String(c.csMs),
        fmt(c.acquisitionsPerS),
        fmt(c.triesPerS),
        fmt(c.roundTripsPerAcquisition, 2),
        fmt(c.redisCommandsPerAcquisition, 1),
        fmt(c.waitMs.p50, 2),
        fmt(c.waitMs.p99, 2),
        fmt(c.waitMs.p999, 2),
        fmt(c.waitMs.max, 1),
        pct(c.sameHolderShare),
        pct(c.overtakenShare),
        `${c.perClient.min}..${c.perClient.max}`,
        fmt(c.jain, 3),
        String(c.errors),
        String(c.stuckClients),
        String(c.violations),
        `${fmt(c.cpuUsPerAcquisition.clients)}+${fmt(c.cpuUsPerAcquisition.redis)}`,
        fmt(c.machineBusyCores, 2),
      ]),
    ),
  );
  printCommandBreakdown(cells, config);
  console.log('\nUncontended: one process, 1,000 independent keys (acquire + release cycles per second)');
  console.log(
    table(
      ['implementation', 'cycles/s', 'rt/cycle', "of its client's floor", 'errors'],
      multiKey.map((m) => {
        // The raw-scripts row of the same client library (ids end in -ioredis / -node-redis).
        const client = /-(ioredis|node-redis)$/.exec(m.impl)?.[1];
        const floor = multiKey.find((f) => f.impl === `raw-scripts-${client}`);
        const share =
          floor && m.impl.startsWith('locksmith')
            ? `${fmt((100 * m.cyclesPerS) / floor.cyclesPerS, 1)}%`
            : '';
        return [m.label, fmt(m.cyclesPerS), fmt(m.roundTripsPerCycle, 2), share, String(m.errors)];
      }),
    ),
  );
  console.log(
    `redis-benchmark EVALSHA (hand-off-acquire, 50 connections, no pipelining): ${evalshaCeiling ? `${fmt(evalshaCeiling)} calls/s` : 'not available'}`,
  );
  const errorCells = cells.filter((c) => c.errors > 0 && c.errorSamples.length > 0);
  if (errorCells.length > 0) {
    console.log('\nError samples:');
    for (const c of errorCells) console.log(`  ${c.impl} ×${c.clients}: ${c.errorSamples[0]}`);
  }
  printTargets(
    cells.filter((c) => c.limit === 1),
    multiKey,
    evalshaCeiling,
    config,
  );
  printSemaphoreTargets(
    cells.filter((c) => !c.readWrite),
    fmt,
    pct,
  );
  printRedlockTargets(cells, fmt);
  printKindCosts(cells, multiKey, fmt);
}

/**
 * The P × C cells (issue #23): P processes × C acquirers on one key. Fairness over the acquirers and
 * over the processes, and the share of acquisitions to the previous holder's acquirer and process: a
 * lock that batches a process's acquirers behind one Redis waiter keeps the lock in the process
 * (high "same proc.") while staying fair between processes (Jain over processes near 1).
 */
function printPxc(cells: Cell[]): void {
  if (cells.length === 0) return;
  console.log(
    '\nP × C: P processes × C concurrent acquirers each, one key (wait = time in acquire(), ms; Jain over acquirers and over processes; ' +
      'same acq./proc. = share to the acquirer / process that held it just before; calls = client round trips to Redis, cmds = Redis commands, per acquisition)',
  );
  console.log(
    table(
      [
        'implementation',
        'P×C',
        'cs ms',
        'acq/s',
        'p50',
        'p99',
        'max',
        'Jain acq.',
        'Jain proc.',
        'same acq.',
        'same proc.',
        'calls/acq',
        'cmds/acq',
        'errors',
        'stuck',
        'viol.',
      ],
      cells.map((c) => [
        c.impl,
        `${c.clients}×${c.acquirersPerProcess}`,
        String(c.csMs),
        fmt(c.acquisitionsPerS),
        fmt(c.waitMs.p50, 2),
        fmt(c.waitMs.p99, 2),
        fmt(c.waitMs.max, 1),
        fmt(c.jain, 3),
        fmt(c.jainProcesses, 3),
        pct(c.sameHolderShare),
        pct(c.sameProcessShare),
        fmt(c.roundTripsPerAcquisition, 2),
        fmt(c.redisCommandsPerAcquisition, 1),
        String(c.errors),
        String(c.stuckClients),
        String(c.violations),
      ]),
    ),
  );
  const errorCells = cells.filter((c) => c.errors > 0 && c.errorSamples.length > 0);
  for (const c of errorCells)
    console.log(`  errors of ${c.impl} ${c.clients}×${c.acquirersPerProcess}: ${c.errorSamples[0]}`);
}

/** Redis commands per acquisition by command, for Locksmith and the reference, at the top client count. */
function printCommandBreakdown(cells: Cell[], config: Config): void {
  const top = Math.max(...config.clientCounts);
  const rows = cells.filter(
    (c) => c.clients === top && c.csMs === 0 && (c.family === 'locksmith' || c.family === 'reference'),
  );
  if (rows.length === 0) return;
  const totals = new Map<string, number>();
  for (const c of rows)
    for (const [name, perAcq] of Object.entries(c.redisCommandsByName))
      totals.set(name, (totals.get(name) ?? 0) + perAcq);
  const names = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([name]) => name);
  console.log(
    `\nRedis commands per acquisition by command (INFO commandstats), ${top} clients, empty critical section`,
  );
  console.log(
    table(
      ['implementation', 'total', ...names],
      rows.map((c) => [
        c.impl,
        fmt(c.redisCommandsPerAcquisition, 1),
        ...names.map((name) =>
          c.redisCommandsByName[name] ? fmt(c.redisCommandsByName[name] as number, 2) : '',
        ),
      ]),
    ),
  );
}

/** The targets of issue #10, checked against this run only (ratios within one run, not absolute rates). */
function printTargets(
  cells: Cell[],
  multiKey: { impl: string; cyclesPerS: number }[],
  evalshaCeiling: number | undefined,
  config: Config,
): void {
  const lines: string[] = [];
  const check = (ok: boolean, text: string) => lines.push(`  ${ok ? 'met   ' : 'MISSED'} ${text}`);
  const top = Math.max(...config.clientCounts);
  const atTop = cells.filter((c) => c.clients === top && c.csMs === 0);
  const fastest = (of: Cell[]) =>
    of.reduce<Cell | undefined>((a, c) => (!a || c.acquisitionsPerS > a.acquisitionsPerS ? c : a), undefined);
  const bestPeer = fastest(atTop.filter((c) => c.family === 'peer'));
  const reference = atTop.find((c) => c.family === 'reference');
  const vsPeer = (c: Cell) =>
    bestPeer
      ? `${fmt(c.acquisitionsPerS)} acq/s vs best peer ${bestPeer.impl} ${fmt(bestPeer.acquisitionsPerS)}`
      : '';
  const worstOver = (impl: string, field: 'roundTripsPerAcquisition' | 'redisCommandsPerAcquisition') =>
    Math.max(...cells.filter((c) => c.impl === impl && c.clients > 1).map((c) => c[field]));
  for (const client of ['ioredis', 'node-redis', 'ioredis-failfast']) {
    const fair = atTop.find((c) => c.impl === `locksmith-fair-${client}`);
    if (fair) {
      const name = `FairMutex (${client})`;
      if (bestPeer)
        check(fair.acquisitionsPerS >= bestPeer.acquisitionsPerS, `${name} ${top} clients: ${vsPeer(fair)}`);
      if (reference)
        check(
          fair.acquisitionsPerS >= 0.85 * reference.acquisitionsPerS,
          `${name}: ${pct(fair.acquisitionsPerS / reference.acquisitionsPerS)} of the reference hand-off (≥ 85%)`,
        );
      check(
        fair.sameHolderShare === 0 && fair.overtakenShare === 0,
        `${name}: every acquisition a FIFO hand-off (same holder ${pct(fair.sameHolderShare)}, overtaken ${pct(fair.overtakenShare)})`,
      );
      check(fair.jain >= 0.99, `${name}: Jain ${fmt(fair.jain, 3)} (≥ 0.99)`);
      const mean = fair.waitMs.p50; // the wait distribution of a FIFO queue is narrow: p50 ≈ mean
      check(
        fair.waitMs.p99 <= 3 * mean,
        `${name}: wait p99 ${fmt(fair.waitMs.p99, 2)} ms vs p50 ${fmt(mean, 2)} ms (≤ 3×)`,
      );
      const rt = worstOver(fair.impl, 'roundTripsPerAcquisition');
      const cmds = worstOver(fair.impl, 'redisCommandsPerAcquisition');
      check(
        rt <= 2.05,
        `${name}: worst ${fmt(rt, 2)} client round trips per acquisition, 2+ clients (≤ 2.05)`,
      );
      check(cmds <= 10, `${name}: worst ${fmt(cmds, 1)} Redis commands per acquisition, 2+ clients (≤ 10)`);
    }
    const mutex = atTop.find((c) => c.impl === `locksmith-mutex-${client}`);
    if (mutex) {
      const name = `Mutex (${client})`;
      if (bestPeer)
        check(
          mutex.acquisitionsPerS >= bestPeer.acquisitionsPerS,
          `${name} ${top} clients: ${vsPeer(mutex)}`,
        );
      check(
        mutex.roundTripsPerAcquisition <= 2.5,
        `${name}: ${fmt(mutex.roundTripsPerAcquisition, 2)} round trips per acquisition (≤ 2.5)`,
      );
      check(
        mutex.redisCommandsPerAcquisition <= 8,
        `${name}: ${fmt(mutex.redisCommandsPerAcquisition, 1)} Redis commands per acquisition (≤ 8)`,
      );
      const ratio = mutex.perClient.max > 0 ? mutex.perClient.min / mutex.perClient.max : 0;
      check(ratio >= 0.5, `${name}: min/max acquisitions per client ${fmt(ratio, 2)} (≥ 0.5)`);
    }
  }
  const single = cells.filter((c) => c.clients === 1 && c.csMs === 0);
  const fastestSingle = fastest(single.filter((c) => c.family === 'peer'));
  for (const c of single.filter((s) => s.family === 'locksmith')) {
    if (fastestSingle)
      check(
        c.acquisitionsPerS >= 0.9 * fastestSingle.acquisitionsPerS,
        `${c.impl}, 1 client: ${fmt(c.acquisitionsPerS)} cycles/s vs fastest peer ${fastestSingle.impl} ${fmt(fastestSingle.acquisitionsPerS)} (within 10%)`,
      );
  }
  for (const m of multiKey.filter((m) => m.impl.startsWith('locksmith'))) {
    if (evalshaCeiling)
      check(
        m.cyclesPerS >= 0.8 * (evalshaCeiling / 2),
        `${m.impl}: ${fmt(m.cyclesPerS)} cycles/s over 1,000 keys vs half redis-benchmark's EVALSHA ${fmt(evalshaCeiling / 2)} (≥ 80%)`,
      );
  }
  const ours = cells.filter((c) => c.family === 'locksmith');
  check(
    ours.every((c) => c.violations === 0 && c.errors === 0),
    `Locksmith: ${ours.reduce((a, c) => a + c.violations, 0)} mutual-exclusion violations, ${ours.reduce((a, c) => a + c.errors, 0)} errors in ${ours.length} cells (0)`,
  );
  const allViolations = cells.reduce((a, c) => a + c.violations, 0);
  lines.push(`  (all implementations: ${allViolations} mutual-exclusion violations)`);
  console.log(`\nTargets of issue #10 (${top} clients, empty critical section, this run):`);
  console.log(lines.join('\n'));
}

await main();
process.exit(0);
