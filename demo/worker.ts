/**
 * A demo worker process. Uses only Locksmith's public API and ioredis.
 *   counter <url> <id> <increments> <lock|no-lock>
 *                       read-modify-write a shared counter, under the lock (fenced) or without it;
 *                       starts when the parent lets every worker go at once (start barrier)
 *   pause   <url> <id>  take the lock, then "work" while the parent freezes us
 *   take    <url> <id>  take the lock after the frozen holder's lease ran out
 * Each other line written to stdout is one JSON event for the parent.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { fencedWrite, Mutex } from '../src/index.js';
import { awaitStartSignal } from '../tools/start-barrier.js';
import { LOCKED_COUNTER, REPORT, UNLOCKED_COUNTER } from './keys.js';

const [mode, url, id, incrementsText, locking] = process.argv.slice(2);
const redis = new Redis(url ?? '', { maxRetriesPerRequest: null });
const report = (event: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ id, ...event })}\n`);

/** GET, a pause the size of real work, SET: two workers doing this at once lose an update. */
async function readModifyWrite(key: string, write: (next: number) => Promise<void>): Promise<void> {
  const value = Number((await redis.get(key)) ?? 0);
  await sleep(1);
  await write(value + 1);
}

async function countUnlocked(increments: number): Promise<void> {
  for (let i = 0; i < increments; i += 1) {
    await readModifyWrite(UNLOCKED_COUNTER, async (next) => {
      await redis.set(UNLOCKED_COUNTER, String(next));
    });
  }
}

async function countLocked(increments: number): Promise<void> {
  const mutex = new Mutex(redis, 'demo-counter', { ttlMs: 2_000 });
  for (let i = 0; i < increments; i += 1) {
    await mutex.using(async (_signal, lease) => {
      await readModifyWrite(LOCKED_COUNTER, async (next) => {
        // The write only lands if no later lock holder has written already.
        const result = await fencedWrite(redis, LOCKED_COUNTER, lease.fencingToken, String(next));
        if (!result.written) throw new Error(`write refused: ${lease.fencingToken} < ${result.highestToken}`);
        // The value written orders the writes across processes, whatever their clocks say.
        report({ event: 'increment', fencingToken: lease.fencingToken, value: next });
      });
    });
  }
}

async function holdAndFreeze(): Promise<void> {
  const lease = await new Mutex(redis, 'demo-report', { ttlMs: 1_000 }).acquire();
  report({ event: 'holding', fencingToken: lease.fencingToken });
  lease.signal.addEventListener('abort', () =>
    report({ event: 'aborted', reason: lease.signal.reason.name }),
  );
  await sleep(1_500); // the parent freezes this process (SIGSTOP) in the middle of this "work"
  // A careless client writes anyway, with its old fencing token: the resource refuses it.
  const late = await fencedWrite(redis, REPORT, lease.fencingToken, `written by ${id}`);
  report({ event: 'late-write', fencingToken: lease.fencingToken, ...late });
  report({ event: 'released', stillHeld: await lease.release() });
}

async function takeOver(): Promise<void> {
  const lease = await new Mutex(redis, 'demo-report').acquire({ timeoutMs: 10_000 });
  const write = await fencedWrite(redis, REPORT, lease.fencingToken, `written by ${id}`);
  report({ event: 'wrote', fencingToken: lease.fencingToken, ...write });
  await lease.release();
}

try {
  if (mode === 'counter') {
    await redis.ping(); // connected before saying ready, so start-up does not skew the start
    await awaitStartSignal();
    if (locking === 'lock') await countLocked(Number(incrementsText));
    else await countUnlocked(Number(incrementsText));
  } else if (mode === 'pause') await holdAndFreeze();
  else if (mode === 'take') await takeOver();
  else throw new Error(`unknown mode ${mode}`);
} finally {
  redis.disconnect();
}
