/**
 * The scripts in examples/ run against a redis-server this test started (REDIS_URL), and do what
 * they say: one cron run per tick, a leader that keeps its lease and steps down when it loses it,
 * a stale fenced write refused, a lock released on SIGTERM, lock metrics in OpenTelemetry and
 * Prometheus. Each must exit by itself.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { ownerTokenOf } from '../fixtures/lock-value.js';

const root = join(import.meta.dirname, '../..');
/**
 * An example that prints nothing for this long has hung (a silence, not a total: on a busy machine
 * a process with `--import tsx` can take half a minute just to start).
 */
const SILENCE_MS = 60_000;
/** Every example started, so that a failed test leaves none running. */
const started: ChildProcess[] = [];

/** One running example: its output lines as they come, and a way to wait for one. */
class ExampleRun {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  private waiters: (() => void)[] = [];
  private closed = false;
  /** Restarts the silence bound (each line of output). */
  private progress: () => void = () => {};

  constructor(script: string, url: string, env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, ['--import', 'tsx', join(root, 'examples', script)], {
      cwd: root,
      env: { ...process.env, REDIS_URL: url, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(this.child);
    for (const stream of [this.child.stdout, this.child.stderr]) {
      createInterface({ input: stream as NodeJS.ReadableStream }).on('line', (line) => {
        this.lines.push(line);
        this.progress();
        for (const wake of this.waiters.splice(0)) wake();
      });
    }
    this.exited = new Promise((resolve, reject) => {
      const hung = () => {
        this.child.kill('SIGKILL');
        reject(new Error(`${script} printed nothing for ${SILENCE_MS} ms:\n${this.output}`));
      };
      let timer = setTimeout(hung, SILENCE_MS);
      this.progress = () => {
        clearTimeout(timer);
        timer = setTimeout(hung, SILENCE_MS);
      };
      // 'close', not 'exit': output still buffered in the pipes is read by then.
      this.child.on('close', (code) => {
        clearTimeout(timer);
        this.closed = true;
        for (const wake of this.waiters.splice(0)) wake();
        resolve(code);
      });
    });
  }

  get output(): string {
    return this.lines.join('\n');
  }

  /** Resolves with the first line (from `from` on) matching `pattern`; rejects if the script exits first. */
  async line(pattern: RegExp, from = 0): Promise<RegExpMatchArray> {
    for (;;) {
      const found = this.lines.slice(from).find((l) => pattern.test(l));
      if (found) return found.match(pattern) as RegExpMatchArray;
      if (this.closed) throw new Error(`exited without printing ${pattern}:\n${this.output}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

describe('examples/', () => {
  let server: RedisServer;
  const redis = async (...args: string[]) => (await server.command(...args)).split('\r\n');

  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
    await server.stop();
  });

  test('cron-guard: instances firing for one tick run the job once; a late one skips it', async () => {
    const env = (instance: string) => ({ CRON_TICK: '2026-11-22T03:00', INSTANCE: instance });
    const together = ['i1', 'i2', 'i3'].map((i) => new ExampleRun('cron-guard.ts', server.url, env(i)));
    assert.deepEqual(await Promise.all(together.map((r) => r.exited)), [0, 0, 0]);
    const ran = together.filter((r) => /: ran nightly-report for 2026-11-22T03:00$/m.test(r.output));
    const skipped = together.filter((r) => /: skipped nightly-report/.test(r.output));
    assert.equal(ran.length, 1, together.map((r) => r.output).join('\n'));
    assert.equal(skipped.length, 2);

    const late = new ExampleRun('cron-guard.ts', server.url, env('late'));
    assert.equal(await late.exited, 0);
    assert.match(late.output, /late: skipped nightly-report for 2026-11-22T03:00: already done/);
    // The job's observable output: exactly one report for the tick.
    const reports = await redis('LRANGE', 'cron:{nightly-report}:reports', '0', '-1');
    assert.equal(reports[0], '*1', reports.join('|'));
  });

  test('leader-election: the leader keeps its lease past the TTL, steps down when it loses the lock, and SIGTERM releases', async () => {
    const ttlMs = 1_000;
    const lockKey = 'locksmith:{leader:reports}';
    const a = new ExampleRun('leader-election.ts', server.url, {
      INSTANCE: 'A',
      LEADER_TTL_MS: String(ttlMs),
    });
    const firstTerm = Number((await a.line(/^A: leading \(term (\d+)\)$/))[1]);
    const b = new ExampleRun('leader-election.ts', server.url, {
      INSTANCE: 'B',
      LEADER_TTL_MS: String(ttlMs),
    });
    await b.line(/^B: following/);

    // Renewal: for three TTLs the lock keeps A's token and a fresh expiry, and B never leads.
    const token = ownerTokenOf((await redis('GET', lockKey))[1]);
    const renewedUntil = Date.now() + 3 * ttlMs;
    while (Date.now() < renewedUntil) {
      assert.equal(
        ownerTokenOf((await redis('GET', lockKey))[1]),
        token,
        'the lock changed hands while A led',
      );
      assert.ok(Number((await redis('PTTL', lockKey))[0]?.slice(1)) > 0);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(!b.lines.some((l) => l.startsWith('B: leading')), 'B led while A held the lease');

    // Lock loss: someone else's token in the key. A's next renewal finds it, its signal aborts.
    await redis('SET', lockKey, 'intruder', 'PX', '300');
    await a.line(/^A: lost leadership \(LockLostError.*\), stepping down$/);
    const afterLoss = a.lines.findIndex((l) => l.includes('lost leadership')) + 1;
    const next = await Promise.race([
      a.line(/^A: leading \(term (\d+)\)$/, afterLoss),
      b.line(/^B: leading \(term (\d+)\)$/),
    ]);
    assert.ok(Number(next[1]) > firstTerm, 'a new term has a higher fencing token');

    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    assert.deepEqual(await Promise.all([a.exited, b.exited]), [0, 0]);
    assert.match(a.output, /^A: stopped$/m);
    assert.match(b.output, /^B: stopped$/m);
    assert.equal(ownerTokenOf((await redis('GET', lockKey))[1]), '', 'the last leader released on SIGTERM');
  });

  test('fenced-write: the frozen writer’s stale token is refused, the newer holder’s write stays', async () => {
    const run = new ExampleRun('fenced-write.ts', server.url);
    assert.equal(await run.exited, 0, run.output);
    const tokenA = Number((await run.line(/^A holds the lock with fencing token (\d+)/))[1]);
    const tokenB = Number(
      (await run.line(/^B holds the lock with fencing token (\d+); its write accepted: true$/))[1],
    );
    assert.ok(tokenB > tokenA);
    await run.line(/^A writes with its old fencing token \d+; accepted: false$/);
    await run.line(/^A's lease says it is held: false; release reports: false$/);
    assert.match(run.output, new RegExp(`^document 7: "written by B" \\(fence ${tokenB}\\)$`, 'm'));
  });

  test('graceful-shutdown: SIGTERM releases the lock at once (not after its 60 s TTL) and the process exits', async () => {
    const lockKey = 'locksmith:{queue-consumer}';
    const run = new ExampleRun('graceful-shutdown.ts', server.url);
    await run.line(/^consuming, lock held/);
    assert.ok(Number((await redis('PTTL', lockKey))[0]?.slice(1)) > 30_000, 'held with a long TTL');
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.output);
    assert.match(run.output, /^processed [1-9]\d* items$/m);
    assert.match(run.output, /^released the lock: true$/m);
    assert.equal(ownerTokenOf((await redis('GET', lockKey))[1]), '');
  });

  /** The metrics both examples report for their workload: 16 acquisitions, 16 holds, 1 timeout. */
  test('metrics-opentelemetry: the in-memory exporter holds the acquisitions, waits, holds, contentions and the timeout', async () => {
    const run = new ExampleRun('metrics-opentelemetry.ts', server.url);
    assert.equal(await run.exited, 0, run.output);
    const value = (metric: string) =>
      Number(
        (run.output.match(
          new RegExp(
            `^${metric.replaceAll('.', '\\.')} \\{"lock":"metrics-example:report"[^}]*\\} (?:count )?(\\d+)$`,
            'm',
          ),
        ) ?? [])[1],
      );
    assert.match(
      run.output,
      /^locksmith\.acquisitions \{"lock":"metrics-example:report","kind":"Mutex"\} 16$/m,
    );
    assert.equal(value('locksmith.wait.duration'), 16);
    assert.equal(value('locksmith.hold.duration'), 16);
    assert.equal(value('locksmith.timeouts'), 1);
    // The timed-out caller and at least two of the three workers that started together waited.
    assert.ok(value('locksmith.contentions') >= 3, run.output);
  });

  test('metrics-prometheus: the registry text (a scrape) has the counters and histograms', async () => {
    const run = new ExampleRun('metrics-prometheus.ts', server.url);
    assert.equal(await run.exited, 0, run.output);
    const value = (series: string) =>
      Number(
        (run.output.match(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} ([\\d.e-]+)$`, 'm')) ?? [])[1],
      );
    const lock = '{lock="metrics-example:report"}';
    assert.equal(value('locksmith_acquisitions_total{lock="metrics-example:report",kind="Mutex"}'), 16);
    assert.equal(value(`locksmith_wait_seconds_count${lock}`), 16);
    assert.equal(value(`locksmith_hold_seconds_count${lock}`), 16);
    assert.ok(value(`locksmith_hold_seconds_sum${lock}`) > 0);
    assert.equal(value(`locksmith_timeouts_total${lock}`), 1);
    assert.ok(value(`locksmith_contended_total${lock}`) >= 3, run.output);
  });
});
