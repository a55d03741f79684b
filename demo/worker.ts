/**
 * A demo worker process. Uses only Locksmith's public API and ioredis.
 *   counter <url> <id> <increments>   read-modify-write a shared counter under the lock, fenced
 *   pause   <url> <id>                take the lock, then "work" while the parent freezes us
 *   take    <url> <id>                take the lock after the frozen holder's lease ran out
 * Each line written to stdout is one JSON event for the parent.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { fencedWrite, Mutex } from '../src/index.js';

const [mode, url, id, incrementsText] = process.argv.slice(2);
const redis = new Redis(url ?? '', { maxRetriesPerRequest: null });
const report = (event: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ id, ...event })}\n`);

const COUNTER = 'demo:{counter}';

async function incrementCounter(fencingToken: number): Promise<void> {
  const value = Number((await redis.get(COUNTER)) ?? 0);
  // The write only lands if no later lock holder has written already.
  const result = await fencedWrite(redis, COUNTER, fencingToken, String(value + 1));
  if (!result.written) throw new Error(`write refused: token ${fencingToken} < ${result.highestToken}`);
}

try {
  if (mode === 'counter') {
    const mutex = new Mutex(redis, 'counter', { ttlMs: 2_000 });
    for (let i = 0; i < Number(incrementsText); i += 1) {
      await mutex.using(async (_signal, lease) => {
        await incrementCounter(lease.fencingToken);
        report({
          event: 'increment',
          fencingToken: lease.fencingToken,
          at: performance.timeOrigin + performance.now(),
        });
      });
    }
  } else if (mode === 'pause') {
    const lease = await new Mutex(redis, 'report', { ttlMs: 1_000 }).acquire();
    report({ event: 'holding', fencingToken: lease.fencingToken });
    lease.signal.addEventListener('abort', () =>
      report({ event: 'aborted', reason: `${lease.signal.reason.name}: ${lease.signal.reason.message}` }),
    );
    await sleep(1_500); // the parent freezes this process (SIGSTOP) in the middle of this "work"
    // A careless client writes anyway, with its old fencing token: the resource refuses it.
    const late = await fencedWrite(redis, 'demo:{report}', lease.fencingToken, `written by ${id}`);
    report({ event: 'late-write', fencingToken: lease.fencingToken, ...late });
    report({ event: 'released', stillHeld: await lease.release() });
  } else if (mode === 'take') {
    const lease = await new Mutex(redis, 'report').acquire({ timeoutMs: 10_000 });
    const write = await fencedWrite(redis, 'demo:{report}', lease.fencingToken, `written by ${id}`);
    report({ event: 'wrote', fencingToken: lease.fencingToken, ...write });
    await lease.release();
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
} finally {
  redis.disconnect();
}
