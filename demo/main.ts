/**
 * `npm start`: Locksmith in two minutes of reading, on a Redis of its own (or REDIS_URL's).
 * The same workload runs without the lock and with it, then a holder is frozen past its TTL.
 * It ends with a short summary; the exit code says whether the locked runs held their promises.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { READY_LINE, startTogether } from '../tools/start-barrier.js';
import { DEMO_KEYS, LOCKED_COUNTER, REPORT, UNLOCKED_COUNTER } from './keys.js';
import { DemoSetupError, redisForDemo } from './redis-for-demo.js';

const WORKERS = 5;
const INCREMENTS = 40;
const TOTAL = WORKERS * INCREMENTS;
const workerFile = join(import.meta.dirname, 'worker.ts');

type WorkerEvent = { id: string; event: string; [key: string]: unknown };

interface Worker {
  readonly child: ChildProcess;
  readonly done: Promise<void>;
}

function startWorker(args: string[], onEvent: (e: WorkerEvent) => void): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', workerFile, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    if (line !== READY_LINE) onEvent(JSON.parse(line));
  });
  const done = new Promise<void>((resolve, reject) =>
    // 'close', not 'exit': every event line the worker wrote has been read by then.
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`worker ${args[2]} exited with ${code}`)),
    ),
  );
  return { child, done };
}

/** WORKERS processes doing INCREMENTS read-modify-writes each, all released at the same moment. */
async function runCounters(url: string, locking: 'lock' | 'no-lock', onEvent: (e: WorkerEvent) => void) {
  const workers = Array.from({ length: WORKERS }, (_, i) =>
    startWorker(['counter', url, `w${i + 1}`, String(INCREMENTS), locking], onEvent),
  );
  await startTogether(workers.map((w) => w.child));
  await Promise.all(workers.map((w) => w.done));
}

const say = (text = '') => console.log(text);

interface Outcome {
  unlocked: number;
  locked: number;
  tokensIncreasing: boolean;
  aborted: boolean;
  lateWriteRefused: boolean;
}

async function countersWithAndWithoutLock(url: string, redis: Redis) {
  say(`1. ${WORKERS} processes each add 1 to a shared counter ${INCREMENTS} times with a non-atomic`);
  say('   read-modify-write (GET, 1 ms of "work", SET), all starting at the same moment.');
  say('   Without a lock:');
  await runCounters(url, 'no-lock', () => {});
  const unlocked = Number(await redis.get(UNLOCKED_COUNTER));
  say(`     counter = ${unlocked}: ${TOTAL - unlocked} of ${TOTAL} updates lost`);

  say('   With a Mutex around each read-modify-write (and the write fenced):');
  const writes: { token: number; value: number }[] = [];
  await runCounters(url, 'lock', (e) =>
    writes.push({ token: e.fencingToken as number, value: e.value as number }),
  );
  const locked = Number(await redis.get(LOCKED_COUNTER));
  const tokens = writes.sort((x, y) => x.value - y.value).map((w) => w.token);
  const tokensIncreasing = tokens.every((t, i) => i === 0 || t > (tokens[i - 1] as number));
  say(`     counter = ${locked}: ${locked === TOTAL ? 'exact' : 'LOST UPDATES'}`);
  say(
    `     ${tokens.length} fencing tokens, strictly increasing in the order of the writes: ${tokensIncreasing}`,
  );
  return { unlocked, locked, tokensIncreasing };
}

async function frozenHolder(url: string, redis: Redis) {
  say('2. Holder A freezes (SIGSTOP, like a long GC pause) past its 1 s TTL.');
  const events: WorkerEvent[] = [];
  let holding: () => void = () => {};
  const isHolding = new Promise<void>((resolve) => (holding = resolve));
  const paused = startWorker(['pause', url, 'A'], (e) => {
    events.push(e);
    if (e.event === 'holding') holding();
  });
  await isHolding;
  paused.child.kill('SIGSTOP');
  say('   A is frozen. B asks for the lock and gets it once A’s lease has expired, and writes.');
  const taker = startWorker(['take', url, 'B'], (e) => events.push(e));
  await taker.done;
  say('   A wakes up (SIGCONT) and, not checking its signal, writes anyway with its old token.');
  paused.child.kill('SIGCONT');
  await paused.done;
  const event = (id: string, name: string) => events.find((e) => e.id === id && e.event === name);
  const aborted = event('A', 'aborted')?.reason === 'LockLostError';
  const lateWriteRefused = event('A', 'late-write')?.written === false;
  say(`   A's signal aborted with LockLostError: ${aborted}`);
  say(`   A's late write (token ${event('A', 'late-write')?.fencingToken}) refused: ${lateWriteRefused}`);
  say(
    `   ${REPORT} = ${JSON.stringify(await redis.get(REPORT))} (token ${event('B', 'wrote')?.fencingToken})`,
  );
  return { aborted, lateWriteRefused };
}

function summary(o: Outcome): boolean {
  const yes = (b: boolean) => (b ? 'yes' : 'NO');
  const lockedOk = o.locked === TOTAL && o.tokensIncreasing;
  const count = (n: number) => `counter ${String(n).padStart(String(TOTAL).length)} of ${TOTAL}`;
  say('Summary');
  say(`  without the lock   ${count(o.unlocked)}   ${TOTAL - o.unlocked} updates lost`);
  say(
    `  with the lock      ${count(o.locked)}   ${o.locked === TOTAL ? 'exact' : 'LOST UPDATES'}, fencing tokens increasing: ${yes(o.tokensIncreasing)}`,
  );
  say(
    `  frozen holder      signal aborted: ${yes(o.aborted)}, late write refused: ${yes(o.lateWriteRefused)}`,
  );
  const ok = lockedOk && o.aborted && o.lateWriteRefused;
  say(ok ? 'All checks passed.' : 'Some checks FAILED.');
  return ok;
}

async function main(): Promise<void> {
  const server = await redisForDemo();
  say(server.description);
  const redis = new Redis(server.url);
  try {
    await redis.del(...DEMO_KEYS);
    say();
    const counters = await countersWithAndWithoutLock(server.url, redis);
    say();
    const frozen = await frozenHolder(server.url, redis);
    say();
    process.exitCode = summary({ ...counters, ...frozen }) ? 0 : 1;
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

try {
  await main();
} catch (error) {
  if (!(error instanceof DemoSetupError)) throw error;
  console.error(error.message);
  process.exitCode = 1;
}
