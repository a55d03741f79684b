/**
 * `npm start`: Locksmith in two minutes of reading, on a Redis of its own.
 * With REDIS_URL set it uses that server (and only keys under demo:* and locksmith:{…}).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { type RedisServer, startRedis } from '../test/fixtures/redis-server.js';

const WORKERS = 5;
const INCREMENTS = 40;
const workerFile = join(import.meta.dirname, 'worker.ts');

type WorkerEvent = { id: string; event: string; [key: string]: unknown };

function startWorker(
  args: string[],
  onEvent: (e: WorkerEvent) => void,
): { child: ChildProcess; done: Promise<void> } {
  const child = spawn(process.execPath, ['--import', 'tsx', workerFile, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) =>
    onEvent(JSON.parse(line)),
  );
  const done = new Promise<void>((resolve, reject) =>
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`worker ${args[2]} exited with ${code}`)),
    ),
  );
  return { child, done };
}

const say = (text = '') => console.log(text);

async function main(): Promise<void> {
  let server: RedisServer | undefined;
  let url = process.env.REDIS_URL;
  if (!url) {
    server = await startRedis();
    url = server.url;
    say(`Started redis-server (pid ${server.pid}) on ${url}; set REDIS_URL to use your own.`);
  } else {
    say(`Using REDIS_URL=${url}`);
  }
  const redis = new Redis(url);
  try {
    await redis.del('demo:{counter}', 'demo:{counter}:fence', 'demo:{report}', 'demo:{report}:fence');

    say();
    say(`1. ${WORKERS} processes each add 1 to a shared counter ${INCREMENTS} times, with a`);
    say('   non-atomic read-modify-write (GET, then SET) under one lock.');
    const tokens: { token: number; at: number }[] = [];
    let progress = 0;
    const workers = Array.from({ length: WORKERS }, (_, i) =>
      startWorker(['counter', url as string, `w${i + 1}`, String(INCREMENTS)], (e) => {
        tokens.push({ token: e.fencingToken as number, at: e.at as number });
        progress += 1;
        if (process.stdout.isTTY && progress % 10 === 0) {
          process.stdout.write(`\r   ${progress}/${WORKERS * INCREMENTS} increments`);
        }
      }),
    );
    await Promise.all(workers.map((w) => w.done));
    const counter = Number(await redis.get('demo:{counter}'));
    const ordered = tokens.sort((x, y) => x.at - y.at).map((t) => t.token);
    const increasing = ordered.every((t, i) => i === 0 || t > (ordered[i - 1] as number));
    if (process.stdout.isTTY) process.stdout.write('\r');
    say(
      `   counter = ${counter}, expected ${WORKERS * INCREMENTS}: ${counter === WORKERS * INCREMENTS ? 'exact' : 'LOST UPDATES'}`,
    );
    say(
      `   fencing tokens ${ordered[0]}…${ordered.at(-1)}, strictly increasing in the order of the writes: ${increasing}`,
    );

    say();
    say('2. A holder freezes (SIGSTOP, like a long GC pause) past its 1 s TTL.');
    const events: WorkerEvent[] = [];
    const log = (e: WorkerEvent) => {
      events.push(e);
      const { id, event, ...rest } = e;
      say(`   ${id}: ${event} ${JSON.stringify(rest)}`);
    };
    let holding: () => void = () => {};
    const isHolding = new Promise<void>((r) => (holding = r));
    const paused = startWorker(['pause', url, 'A'], (e) => {
      log(e);
      if (e.event === 'holding') holding();
    });
    await isHolding;
    paused.child.kill('SIGSTOP');
    say('   A is frozen. B asks for the lock and gets it once A’s lease has expired:');
    const taker = startWorker(['take', url, 'B'], log);
    await taker.done;
    say('   A wakes up (SIGCONT):');
    paused.child.kill('SIGCONT');
    await paused.done;
    const aborted = events.some((e) => e.id === 'A' && e.event === 'aborted');
    const refused = events.some((e) => e.id === 'A' && e.event === 'late-write' && e.written === false);
    say(
      `   A's signal aborted with LockLostError: ${aborted}; A's late write refused by fencing: ${refused}`,
    );
    say(`   demo:{report} = ${JSON.stringify(await redis.get('demo:{report}'))}`);

    const ok = counter === WORKERS * INCREMENTS && increasing && aborted && refused;
    say();
    say(ok ? 'All checks passed.' : 'Some checks FAILED.');
    process.exitCode = ok ? 0 : 1;
  } finally {
    redis.disconnect();
    await server?.stop();
  }
}

await main();
