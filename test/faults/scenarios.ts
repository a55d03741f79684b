/**
 * The fault scenarios. Each runs the worker pool against a fresh redis-server while its fault loop
 * runs, then the checker decides. Timings are relative to the TTL and generous: the suite shares a
 * small machine with other work, and a slow machine may only lose leases (counted, expected), never
 * produce a violation, because the checker judges each holder by its own reckoning.
 *
 * Every scenario runs for the Semaphore too (its checker counts permits against the limit), except
 * those marked `exclusive`, which exercise fencing of one register. Extension point: Redlock
 * (minority/majority node loss: a `redis` with N servers and a fault loop over subsets) adds
 * scenarios here once it exists; nothing is stubbed for it today.
 */
import type { CheckReport } from './toolkit/checker.js';
import { every, type FaultContext, type Scenario } from './toolkit/harness.js';
import type { CommandAction, ProxiedCommand } from './toolkit/proxy.js';
import type { WorkerHandle } from './toolkit/workers.js';

const need = (ok: boolean, message: string): string | undefined => (ok ? undefined : message);
const atLeast = (ctx: FaultContext, name: string, n: number) =>
  need(
    (ctx.counts[name] ?? 0) >= n,
    `fault "${name}" happened ${ctx.counts[name] ?? 0} times, expected ≥ ${n}`,
  );

/** Proxy rule: swallow the reply of (or drop) some commands running the given script kind. */
function lossyReplies(ctx: FaultContext, kind: 'acquire' | 'extend' | 'release', probability: number) {
  return (command: ProxiedCommand): CommandAction => {
    if (!command.script?.endsWith(`-${kind}`)) return 'forward';
    const roll = Math.random();
    if (roll < probability) {
      ctx.count(`${kind} reply lost`);
      return 'swallow-reply';
    }
    if (roll < probability * 1.5) {
      ctx.count(`${kind} dropped`);
      return 'drop';
    }
    return 'forward';
  };
}

/**
 * Every `everyMs`, freezes Redis for 1.6 TTLs, alternating SIGSTOP (the process freezes) and CLIENT
 * PAUSE ALL (Redis keeps its clock and expiries going but serves nobody). Counted as `sigstopName`
 * and 'CLIENT PAUSE'.
 */
async function pauseRedisAlternately(
  ctx: FaultContext,
  everyMs: readonly [number, number],
  sigstopName: string,
): Promise<void> {
  let frozen = false;
  await every(ctx, everyMs, async () => {
    const ms = Math.round(1.6 * ctx.ttlMs);
    frozen = !frozen;
    if (frozen) {
      ctx.server.pause();
      ctx.count(sigstopName);
      await new Promise((r) => setTimeout(r, ms));
      ctx.server.resume();
    } else {
      await ctx.server.pauseClients(ms);
      ctx.count('CLIENT PAUSE');
      await new Promise((r) => setTimeout(r, ms));
    }
  });
}

const lastPause = new WeakMap<FaultContext, number>();

/**
 * Pauses worker 0 (SIGSTOP) right after its read reaches the resource, so it is inside its critical
 * section holding a token, for longer than the TTL; the other workers take the lock meanwhile.
 * Worker 0 does not honour its signal (it writes after the pause whatever happened), like a
 * process frozen between its check and its write: only fencing can stop that write.
 */
function pauseHolderOnRead(ctx: FaultContext, worker: WorkerHandle, request: { op: string }) {
  if (worker.index !== 0 || request.op !== 'read' || ctx.signal.aborted || worker.isPaused) return;
  const now = performance.now();
  if (now - (lastPause.get(ctx) ?? Number.NEGATIVE_INFINITY) < 4 * ctx.ttlMs) return;
  lastPause.set(ctx, now);
  ctx.count('holder paused');
  setImmediate(() => {
    worker.pause();
    setTimeout(() => worker.resume(), 2 * ctx.ttlMs + 200).unref();
  });
}

const pausedHolderConfig = (index: number) => ({ honorSignal: index !== 0, workMs: [2, 6] as const });

const fencedStaleWrites = (report: CheckReport) =>
  need(report.resource.fencedRejections > 0, 'no stale access reached the resource: fencing untested');

export const scenarios: readonly Scenario[] = [
  {
    name: 'baseline contention',
    expect: 'safe',
  },
  {
    name: 'redis paused past TTL',
    expect: 'safe',
    config: { acquireTimeoutMs: 5_000 },
    fault: (ctx) => pauseRedisAlternately(ctx, [800, 1_200], 'SIGSTOP'),
    exercised: (ctx) => atLeast(ctx, 'SIGSTOP', 1) ?? atLeast(ctx, 'CLIENT PAUSE', 1),
  },
  {
    name: 'redis killed and restarted (AOF)',
    expect: 'safe',
    redis: { appendOnly: true },
    config: { acquireTimeoutMs: 5_000 },
    async fault(ctx) {
      await every(ctx, [900, 1_400], async () => {
        await ctx.server.kill();
        ctx.count('kill -9');
        await new Promise((r) => setTimeout(r, 150 + Math.random() * 300));
        await ctx.server.restart();
      });
    },
    exercised: (ctx) => atLeast(ctx, 'kill -9', 1),
  },
  {
    name: 'connections killed every 50-200 ms',
    expect: 'safe',
    async fault(ctx) {
      await every(ctx, [50, 200], async () => {
        ctx.count('CLIENT KILL', await ctx.server.killClients());
      });
    },
    exercised: (ctx) => atLeast(ctx, 'CLIENT KILL', 20),
  },
  {
    name: 'NOSCRIPT storm (SCRIPT FLUSH)',
    expect: 'safe',
    async fault(ctx) {
      await every(ctx, [10, 40], async () => {
        await ctx.server.flushScripts();
        ctx.count('SCRIPT FLUSH');
      });
    },
    exercised: (ctx) => atLeast(ctx, 'SCRIPT FLUSH', 50),
  },
  {
    name: 'proxy delays and black-holes',
    expect: 'safe',
    proxy: true,
    config: { acquireTimeoutMs: 5_000 },
    async fault(ctx) {
      const proxy = ctx.proxy as NonNullable<typeof ctx.proxy>;
      proxy.delay = () => (Math.random() < 0.05 ? 20 + Math.random() * 60 : Math.random() * 4);
      let step = 0;
      await every(ctx, [600, 900], async () => {
        step += 1;
        if (step % 3 === 0) {
          ctx.count('reset all', proxy.resetAll());
          return;
        }
        // A partition longer than the TTL, then the dead connections are noticed and reset.
        proxy.blackhole();
        ctx.count('black-hole');
        await new Promise((r) => setTimeout(r, 1.3 * ctx.ttlMs));
        proxy.heal();
      });
      proxy.delay = 0;
    },
    exercised: (ctx) => atLeast(ctx, 'black-hole', 1),
  },
  ...(['acquire', 'extend', 'release'] as const).map(
    (kind): Scenario => ({
      name: `lost replies: ${kind}`,
      expect: 'safe',
      proxy: true,
      // Extensions only happen in critical sections longer than a third of the TTL.
      config: kind === 'extend' ? { ttlMs: 300, workMs: [60, 160] } : {},
      lockCount: kind === 'extend' ? 4 : 2,
      async fault(ctx) {
        const proxy = ctx.proxy as NonNullable<typeof ctx.proxy>;
        // Extensions are few (about one per two critical sections), so they are lost more often:
        // at 0.15 a run once saw only 3 lost replies (CI, "not exercised"); at 0.25 about 12 are expected.
        proxy.rule = lossyReplies(ctx, kind, kind === 'extend' ? 0.25 : 0.04);
        await ctx.wait(Number.POSITIVE_INFINITY);
        proxy.rule = undefined;
      },
      exercised: (ctx) => atLeast(ctx, `${kind} reply lost`, 5),
    }),
  ),
  {
    name: 'holder paused past TTL (fenced)',
    expect: 'safe',
    exclusive: true,
    config: pausedHolderConfig,
    onResource: pauseHolderOnRead,
    exercised: (ctx, report) => atLeast(ctx, 'holder paused', 1) ?? fencedStaleWrites(report),
  },
  {
    // Whatever the worker is doing (holding, waiting in a queue, idle) it freezes past the TTL. A
    // waiter frozen through its hand-off must come back knowing that lease is gone.
    name: 'workers paused at random (SIGSTOP)',
    expect: 'safe',
    async fault(ctx) {
      await every(ctx, [250, 500], async () => {
        const worker = ctx.workers[Math.floor(Math.random() * ctx.workers.length)];
        if (!worker || worker.isPaused) return;
        worker.pause();
        ctx.count('SIGSTOP worker');
        setTimeout(() => worker.resume(), 1.5 * ctx.ttlMs).unref();
      });
    },
    exercised: (ctx) => atLeast(ctx, 'SIGSTOP worker', 3),
  },
  {
    name: 'extension racing a release',
    expect: 'safe',
    // Critical sections end right around the watchdog's extension (ttl/3), and each release is
    // raced by a manual extend() fired just before it.
    config: { ttlMs: 300, workMs: [95, 105], extendBeforeRelease: true },
    lockCount: 4,
  },
  {
    // Trust item 1: every critical section first extends its lease to a TTL shorter than the one
    // it was granted, while holders and Redis are frozen past that shorter TTL. A lease that kept
    // its old, longer validity would overlap the next holder (and outlive its key in the probes).
    name: 'shortened extensions under pauses',
    expect: 'safe',
    config: { ttlMs: 600, shortenExtendMs: [120, 300], workMs: [5, 60], acquireTimeoutMs: 5_000 },
    async fault(ctx) {
      let step = 0;
      await every(ctx, [300, 600], async () => {
        step += 1;
        const ms = Math.round(1.2 * ctx.ttlMs);
        if (step % 3 === 0) {
          ctx.server.pause();
          ctx.count('SIGSTOP redis');
          await new Promise((r) => setTimeout(r, ms));
          ctx.server.resume();
          return;
        }
        const worker = ctx.workers[Math.floor(Math.random() * ctx.workers.length)];
        if (!worker || worker.isPaused) return;
        worker.pause();
        ctx.count('SIGSTOP worker');
        setTimeout(() => worker.resume(), ms).unref();
      });
    },
    exercised: (ctx, report) =>
      atLeast(ctx, 'SIGSTOP worker', 2) ??
      need(
        (report.workerCounts['shortened extension'] ?? 0) >= 20,
        `only ${report.workerCounts['shortened extension'] ?? 0} shortened extensions`,
      ),
  },
  {
    // Trust items 2 and 3: acquire replies are lost (the script ran, the connection is reset) and
    // the callers give up at once — `retries: 0` on half the workers, `tryAcquire()` on the others.
    // Whatever a caller was told, a token nobody was granted must not keep the lock (sampled every
    // ~20 ms: one seen for longer than half the TTL is flagged as an orphaned key).
    name: 'lost acquire replies, callers give up',
    expect: 'safe',
    proxy: true,
    checkOrphans: true,
    config: (index) =>
      index % 2 === 0 ? { acquireRetries: 0, acquireTimeoutMs: 1_000 } : { acquireMode: 'try' as const },
    async fault(ctx) {
      const proxy = ctx.proxy as NonNullable<typeof ctx.proxy>;
      proxy.rule = lossyReplies(ctx, 'acquire', 0.12);
      await ctx.wait(Number.POSITIVE_INFINITY);
      proxy.rule = undefined;
    },
    exercised: (ctx) => atLeast(ctx, 'acquire reply lost', 5),
  },
  {
    // Trust items 4 and 5: one lock, every worker queued behind it, Redis frozen past the TTL while
    // hand-offs are in flight. A FairMutex must never resolve with (or run work on) a lease whose
    // validity is gone; the checker flags such a grant ("expired-grant") and any overlap.
    name: 'redis paused with queued waiters',
    expect: 'safe',
    lockCount: 1,
    config: { acquireTimeoutMs: 4_000, workMs: [5, 25], thinkMs: [0, 1] },
    // CLIENT PAUSE: hand-offs made just before reach their waiters after the handed-off lease ran out.
    fault: (ctx) => pauseRedisAlternately(ctx, [500, 900], 'SIGSTOP redis'),
    exercised: (ctx) => atLeast(ctx, 'SIGSTOP redis', 1) ?? atLeast(ctx, 'CLIENT PAUSE', 1),
  },
  {
    // Trust item 7: Redis restarted WITHOUT persistence forgets the lock (two holders at once is a
    // documented non-guarantee, tolerated and counted here) and the fencing counter. Tokens must
    // still only grow (each is at least the server's clock in µs), so the fenced resource refuses
    // the old holder's late write: no stale token accepted, no lost update, no token going back.
    name: 'restart without persistence (fencing holds)',
    expect: 'safe',
    redis: { appendOnly: false },
    tolerate: ['overlap', 'lease-outlived-expiry'],
    config: { acquireTimeoutMs: 5_000, workMs: [2, 20] },
    async fault(ctx) {
      await every(ctx, [900, 1_400], async () => {
        await ctx.server.kill();
        ctx.count('kill -9');
        await ctx.server.restart();
      });
    },
    exercised: (ctx) => atLeast(ctx, 'kill -9', 2),
  },
  {
    name: 'abort storm',
    expect: 'safe',
    proxy: true,
    config: { abortAfterMs: [0, 25], workMs: [2, 10], thinkMs: [0, 1] },
    async fault(ctx) {
      // A little latency, so aborts also land while an attempt is in flight, not only while waiting.
      (ctx.proxy as NonNullable<typeof ctx.proxy>).delay = () => Math.random() * 3;
      await ctx.wait(Number.POSITIVE_INFINITY);
    },
    exercised: (_ctx, report) =>
      need((report.failures.aborted ?? 0) >= 100, `only ${report.failures.aborted ?? 0} acquires aborted`),
  },
];

/** Negative controls: deliberately broken locking the checker must flag. */
export const controls: readonly Scenario[] = [
  { name: 'control: no lock', expect: 'flagged', locks: ['no-lock'], config: { workMs: [1, 4] } },
  {
    name: 'control: TTL < critical section, no renewal',
    expect: 'flagged',
    locks: ['naive-short-ttl'],
    config: { ttlMs: 30, workMs: [40, 80] },
  },
  {
    name: 'control: unfenced paused holder',
    expect: 'flagged',
    locks: ['mutex'],
    fenced: false,
    config: pausedHolderConfig,
    onResource: pauseHolderOnRead,
    exercised: (ctx) => atLeast(ctx, 'holder paused', 1),
  },
  {
    // Checks the end-of-run key checks themselves: a lease dropped without release() is renewed by
    // its watchdog for as long as the process lives, which is exactly a "key renewed for ever".
    // The at-most-K checker on real histories: a semaphore whose Redis admits one permit more
    // than the limit it is checked against.
    name: 'control: semaphore admitting a permit too many',
    expect: 'flagged',
    locks: ['leaky-semaphore'],
    config: { workMs: [2, 10] },
  },
  {
    name: 'control: lease never released',
    expect: 'flagged',
    locks: ['never-released'],
    config: { acquireTimeoutMs: 500 },
  },
  {
    // The negative control of "restart without persistence (fencing holds)": the same deployment
    // and the same tolerance, with fencing tokens from a plain INCR counter (Locksmith's scheme
    // before the server-time floor). The restarted counter starts over at 1, so tokens go back.
    name: 'control: restart without persistence, INCR-counter tokens',
    expect: 'flagged',
    locks: ['counter-fenced'],
    redis: { appendOnly: false },
    tolerate: ['overlap', 'lease-outlived-expiry'],
    config: { workMs: [2, 20] },
    async fault(ctx) {
      await every(ctx, [900, 1_400], async () => {
        await ctx.server.kill();
        ctx.count('kill -9');
        await ctx.server.restart();
      });
    },
  },
];

/**
 * The soak profile's scenario: every 0.3–1.5 s a fault drawn at random from all of the above, on a
 * Redis with AOF (so restarts keep their data) behind the proxy.
 */
export const chaos: Scenario = {
  name: 'chaos (random mix of faults)',
  expect: 'safe',
  proxy: true,
  redis: { appendOnly: true },
  config: { acquireTimeoutMs: 5_000, workMs: [0, 60] },
  async fault(ctx) {
    const proxy = ctx.proxy as NonNullable<typeof ctx.proxy>;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const faults: Record<string, () => Promise<void>> = {
      'SIGSTOP redis': async () => {
        ctx.server.pause();
        await sleep(Math.random() * 2 * ctx.ttlMs);
        ctx.server.resume();
      },
      'CLIENT PAUSE': async () => {
        const ms = Math.round(Math.random() * 2 * ctx.ttlMs);
        await ctx.server.pauseClients(ms);
        await sleep(ms);
      },
      'CLIENT KILL': async () => {
        await ctx.server.killClients();
      },
      'SCRIPT FLUSH': async () => {
        await ctx.server.flushScripts();
      },
      'kill -9 + restart': async () => {
        await ctx.server.kill();
        await sleep(Math.random() * 500);
        await ctx.server.restart();
      },
      'black-hole': async () => {
        proxy.blackhole();
        await sleep(Math.random() * 2 * ctx.ttlMs);
        proxy.heal();
      },
      'reset all': async () => {
        proxy.resetAll();
      },
      'latency burst': async () => {
        proxy.delay = () => Math.random() * 50;
        await sleep(1_000);
        proxy.delay = 0;
      },
      'lost replies': async () => {
        const kind = (['acquire', 'extend', 'release'] as const)[Math.floor(Math.random() * 3)] ?? 'acquire';
        proxy.rule = lossyReplies(ctx, kind, 0.2);
        await sleep(1_000);
        proxy.rule = undefined;
      },
      'SIGSTOP a worker': async () => {
        const worker = ctx.workers[Math.floor(Math.random() * ctx.workers.length)];
        worker?.pause();
        await sleep(Math.random() * 2 * ctx.ttlMs);
        worker?.resume();
      },
    };
    const names = Object.keys(faults);
    await every(ctx, [300, 1_500], async () => {
      const name = names[Math.floor(Math.random() * names.length)] as string;
      ctx.count(name);
      await (faults[name] as () => Promise<void>)();
    });
  },
};
