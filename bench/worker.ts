/**
 * One benchmark client: its own process, its own connections. The parent sends a cell to run; the
 * worker builds the lock (one object per process, as its implementation creates it), says it is
 * ready, waits for the common start instant, then acquires and releases in a loop (in a P × C cell,
 * C loops at once on that one object) until the end instant and reports what it saw.
 *
 * Critical sections are stamped with `process.hrtime` (CLOCK_MONOTONIC, one clock for every process
 * on the machine), so the parent can check that no two of them overlapped: a correct lock grants the
 * next holder only after the previous holder sent its release, so overlapping stamps are a
 * mutual-exclusion violation, never clock noise.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { type ImplSpec, impls, type LockUnderTest, type Release } from './impls.js';
import { type CellResult, STUCK_AFTER_MS, type ToParent, type ToWorker } from './protocol.js';
import { counter, countIoRedis, countNodeRedis } from './roundtrips.js';

const url = process.env.BENCH_REDIS_URL;
if (!url) throw new Error('BENCH_REDIS_URL is not set');

const ioredis = new Redis(url, { maxRetriesPerRequest: null });
ioredis.on('error', () => {});
const nodeRedis = createClient({ url });
nodeRedis.on('error', () => {});
await nodeRedis.connect();
// Fail-fast: commands fail at once while disconnected instead of queueing (issue #10 asks for the
// same figures and no stuck client with it). Connected before the first cell, as such users do.
const ioredisFailFast = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
ioredisFailFast.on('error', () => {});
await new Promise((resolve) => ioredisFailFast.once('ready', resolve));
countIoRedis(ioredis);
countIoRedis(ioredisFailFast);
countNodeRedis(nodeRedis);
// The Redlock cells' servers (this one first), when the run started them.
const quorum = process.env.BENCH_REDLOCK_URLS?.split(',').map((u) => {
  const client = new Redis(u, { maxRetriesPerRequest: null });
  client.on('error', () => {});
  return client;
});
const clients = { ioredis, nodeRedis, ioredisFailFast, quorum };

const send = (message: ToParent) => process.send?.(message);
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

const STUCK = Symbol('stuck');
/**
 * How long the next cell waits for this worker's abandoned (stuck) calls to end: a full run 60 s, so
 * their retries do not load the next cell's measurement; a smoke run (`--quick`) 3 s, since it
 * measures nothing (some peers' stuck calls made the smoke run a minute longer per cell).
 */
const ABANDONED_WAIT_MS = Number(process.env.BENCH_ABANDONED_WAIT_MS ?? 60_000);
/** Calls a stuck client gave up on: some peers keep retrying for minutes. */
const abandoned: Promise<unknown>[] = [];

/**
 * Waits (at most `ABANDONED_WAIT_MS`) for calls abandoned as stuck to end before the next cell, so
 * their retries do not load the servers while another implementation is measured.
 */
async function settleAbandoned(): Promise<void> {
  if (abandoned.length === 0) return;
  const pending = abandoned.splice(0);
  const ended = await Promise.race([
    Promise.allSettled(pending).then(() => true),
    sleep(ABANDONED_WAIT_MS).then(() => false),
  ]);
  if (!ended)
    console.error(`bench worker ${process.pid}: a stuck call still runs after ${ABANDONED_WAIT_MS} ms`);
}

let prepared: { spec: ImplSpec; lock: LockUnderTest; csMs: number; acquirers: number } | undefined;

function specFor(id: string): ImplSpec {
  const spec = impls.find((s) => s.id === id);
  if (!spec) throw new Error(`unknown implementation ${id}`);
  return spec;
}

function startCounting(spec: ImplSpec): { tries: () => number } {
  counter.roundTrips = 0;
  let tries = 0;
  const isTry = spec.isTry;
  counter.onCommand = isTry
    ? (name, arg) => {
        if (isTry(name, arg)) tries += 1;
      }
    : undefined;
  return { tries: () => tries };
}

async function runContended(warmFrom: number, startAt: number, endAt: number): Promise<CellResult> {
  if (!prepared) throw new Error('no cell prepared');
  const { spec, lock, csMs, acquirers } = prepared;
  await sleep(Math.max(0, warmFrom - Date.now()));
  // One timer for the whole cell (not one per call, which every cell would pay for): a call still
  // waiting when it fires, `STUCK_AFTER_MS` after the window, is stuck. Warm-up calls count too: a
  // loop stuck there never reaches the window.
  const stuckTimer = sleep(Math.max(0, endAt + STUCK_AFTER_MS - Date.now())).then((): typeof STUCK => STUCK);
  let stuckAcquirers = 0;
  const stamps: number[] = [];
  let errors = 0;
  const errorSamples: string[] = [];
  const sample = (text: string) => {
    if (errorSamples.length < 3) errorSamples.push(text);
  };
  // The process's counters (round trips, tries, CPU, the profile) cover exactly the window, from
  // `startAt` to `endAt`, whichever acquisitions are under way at either instant; the acquisitions
  // counted are those that entered their critical section within it.
  let profiler: Awaited<ReturnType<typeof startProfiler>>;
  const windowCounters = (async () => {
    await sleep(Math.max(0, startAt - Date.now()));
    const counted = startCounting(spec);
    profiler = await startProfiler();
    const cpuAtStart = process.cpuUsage();
    const triesBefore = lock.tries?.() ?? 0;
    await sleep(Math.max(0, endAt - Date.now()));
    const cpu = process.cpuUsage(cpuAtStart);
    const counters = {
      cpuUs: cpu.user + cpu.system,
      tries: lock.tries ? lock.tries() - triesBefore : counted.tries(),
      roundTrips: counter.roundTrips,
    };
    counter.onCommand = undefined;
    return counters;
  })();
  /**
   * One acquirer: acquire, critical section, release, until the window ends (the time before
   * `startAt` is its warm-up: the same loop, unmeasured, so every implementation is measured with its
   * code compiled and its connections and subscriptions set up).
   */
  const acquireLoop = async (acquirer: number): Promise<void> => {
    let stuck = false;
    /** The call's release, or undefined when the loop is stuck in it (then released if it returns). */
    const acquireUnlessStuck = async (): Promise<Release | undefined> => {
      const acquiring = lock.acquire();
      const first = await Promise.race([acquiring, stuckTimer]);
      if (first !== STUCK) return first;
      stuck = true;
      stuckAcquirers += 1;
      abandoned.push(
        acquiring.then(
          (late) => late().catch(() => {}),
          () => {},
        ),
      );
      return undefined;
    };
    while (Date.now() < endAt && !stuck) {
      const calledAt = nowUs();
      let release: Release;
      try {
        const acquired = await acquireUnlessStuck();
        if (!acquired) break;
        release = acquired;
      } catch (error) {
        // Errors are counted from the window's start (not in the warm-up).
        if (Date.now() >= startAt) {
          errors += 1;
          sample(String((error as Error)?.message ?? error));
        }
        // A call that fails at once must not keep the event loop (and the other loops' timers) busy.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      const enteredAt = nowUs();
      const now = Date.now();
      const inWindow = now >= startAt && now < endAt;
      if (csMs > 0) await sleep(csMs);
      const leftAt = nowUs();
      try {
        await release();
      } catch (error) {
        if (Date.now() >= startAt) {
          errors += 1;
          sample(`release: ${String((error as Error)?.message ?? error)}`);
        }
      }
      if (inWindow) stamps.push(acquirer, calledAt, enteredAt, leftAt);
    }
  };
  await Promise.all(Array.from({ length: acquirers }, (_, i) => acquireLoop(i)));
  const counters = await windowCounters;
  await profiler?.stop(`${spec.id}-${process.pid}-${startAt}`);
  return {
    stamps,
    acquirers,
    ...counters,
    stuckAcquirers,
    errors,
    errorSamples,
    role: lock.role?.(),
  };
}

/**
 * With BENCH_CPU_PROF_DIR set (`npm run bench -- --cpu-prof-dir=DIR`), a V8 CPU profile of exactly
 * the measured window of each contended cell, written as DIR/<impl>-<pid>-<start>.cpuprofile
 * (summarise with bench/profile-summary.ts, or open in Chrome DevTools).
 */
async function startProfiler(): Promise<{ stop(name: string): Promise<void> } | undefined> {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  if (!dir) return undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop(name) {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** One process, `keys` independent locks, each cycled by its own loop: the uncontended ceiling. */
async function runMultiKey(implId: string, keys: number, prefix: string, durationMs: number) {
  const spec = specFor(implId);
  const locks = Array.from({ length: keys }, (_, i) => spec.create(clients, `${prefix}:${i}`));
  counter.roundTrips = 0;
  let cycles = 0;
  let errors = 0;
  const endAt = Date.now() + durationMs;
  const startedAt = performance.now();
  await Promise.all(
    locks.map(async (lock) => {
      while (Date.now() < endAt) {
        try {
          const release = await lock.acquire();
          await release();
          cycles += 1;
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const elapsedMs = performance.now() - startedAt;
  return { cycles, errors, elapsedMs, roundTrips: counter.roundTrips };
}

process.on('message', (message: ToWorker) => {
  void (async () => {
    try {
      switch (message.type) {
        case 'prepare': {
          await settleAbandoned();
          const spec = specFor(message.implId);
          prepared = {
            spec,
            lock: spec.create(clients, message.key),
            csMs: message.csMs,
            acquirers: message.acquirers,
          };
          send({ type: 'ready' });
          break;
        }
        case 'go':
          send({
            type: 'result',
            result: await runContended(message.warmFrom, message.startAt, message.endAt),
          });
          prepared = undefined;
          break;
        case 'multikey':
          send({
            type: 'multikey-result',
            ...(await runMultiKey(message.implId, message.keys, message.prefix, message.durationMs)),
          });
          break;
        case 'exit':
          ioredis.disconnect();
          ioredisFailFast.disconnect();
          for (const client of quorum ?? []) client.disconnect();
          nodeRedis.destroy();
          process.exit(0);
      }
    } catch (error) {
      send({ type: 'failed', message: String((error as Error)?.stack ?? error) });
    }
  })();
});
send({ type: 'ready' });
