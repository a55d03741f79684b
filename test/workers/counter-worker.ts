/**
 * A worker process for the mutual-exclusion test: increments a counter with a deliberately
 * non-atomic read-modify-write (GET, pause, SET), under the lock or (negative control) without.
 * It starts incrementing only when the parent releases every worker at once (start barrier).
 * argv: <redis url> <client kind name> <lock name> <increments> <"lock" | "no-lock">
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Mutex } from '../../src/index.js';
import { awaitStartSignal } from '../../tools/start-barrier.js';
import { clientKinds } from '../fixtures/clients.js';

const [url, kindName, lockName, incrementsText, mode] = process.argv.slice(2);
const kind = clientKinds.find((k) => k.name === kindName);
if (!url || !kind || !lockName || !incrementsText)
  throw new Error(`bad arguments: ${process.argv.join(' ')}`);

const client = await kind.create(url);
const counterKey = `counter:{${lockName}}`;
const mutex = new Mutex(client.client, lockName, { ttlMs: 5_000, timeoutMs: 60_000 });

const increment = async () => {
  const value = Number((await client.command('GET', counterKey)) ?? 0);
  await sleep(1); // widen the race window: without the lock, updates get lost
  await client.command('SET', counterKey, String(value + 1));
};

// Every worker starts at the same moment, so the workers really overlap (see start-barrier.ts).
await awaitStartSignal();
for (let i = 0; i < Number(incrementsText); i += 1) {
  if (mode === 'lock') await mutex.using(increment);
  else await increment();
}
await client.close();
