/**
 * The `locksmith` command, run as a child process against a redis-server this test started: `run`
 * never lets two commands of one name overlap, reports busy and lost locks with their exit codes,
 * keeps the lock past its TTL, forwards signals and releases; `status`, `list`, `release --force`
 * and `watch` (in a pseudo-terminal) show and do what they say, `--json` included; mistakes are one
 * line and a non-zero exit, quickly. Ordered by observable state (files the commands write, keys in
 * Redis), not by sleeps.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import {
  FairMutex,
  type Lease,
  LockOwner,
  ReadWriteLock,
  ReentrantMutex,
  Semaphore,
} from '../../src/index.js';
import { freePort, type RedisServer, startRedis } from '../../tools/redis-server.js';
import { cli, cliInTerminal, fileAppears, killAllCli, plain } from '../fixtures/cli.js';
import { nameMaker, until } from '../fixtures/helpers.js';
import { ownerTokenOf } from '../fixtures/lock-value.js';

/** The label of a lease taken in this process: its default, host name and PID. */
const OUR_LABEL = `${hostname()}:${process.pid}`;

const EXIT = { usage: 64, notALock: 65, unavailable: 69, busy: 75, lost: 76 } as const;

/** A command that records its environment, says it started, and runs until told to stop. */
const HOLD = `env | grep '^LOCKSMITH_' > "$DIR/env"; : > "$DIR/ready"; while [ ! -e "$DIR/stop" ]; do sleep 0.05; done`;
/** The same, stopping cleanly (exit 0) on SIGTERM after writing "stopped". */
const HOLD_UNTIL_TERM = `trap 'echo stopped > "$DIR/term"; exit 0' TERM; ${HOLD}`;

describe('locksmith (the command)', () => {
  let server: RedisServer;
  let redis: Redis;
  const dirs: string[] = [];
  const name = nameMaker('cli');

  /** A fresh directory for one command's files, passed to it as DIR. */
  const workDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'locksmith-cli-'));
    dirs.push(dir);
    return dir;
  };
  const env = (dir: string) => ({ REDIS_URL: server.url, DIR: dir });
  const envOf = (dir: string) =>
    Object.fromEntries(
      readFileSync(join(dir, 'env'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split('=', 2) as [string, string]),
    );

  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    killAllCli();
    redis.disconnect();
    await server.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('two concurrent runs of one name never overlap (timestamps written by the commands)', async () => {
    const dir = workDir();
    const lock = name();
    const log = join(dir, 'log');
    const job = `echo "start $(date +%s%N) $$" >> "${log}"; sleep 0.3; echo "end $(date +%s%N) $$" >> "${log}"`;
    const runs = [1, 2, 3].map(() => cli(['run', lock, '--', 'sh', '-c', job], env(dir)));
    assert.deepEqual(await Promise.all(runs.map((r) => r.exited)), [0, 0, 0]);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    assert.equal(lines.length, 6, lines.join('\n'));
    for (let i = 0; i < lines.length; i += 2) {
      const [start, startNs, startPid] = (lines[i] as string).split(' ');
      const [end, endNs, endPid] = (lines[i + 1] as string).split(' ');
      assert.equal(start, 'start', lines.join('\n'));
      assert.equal(end, 'end', lines.join('\n'));
      assert.equal(startPid, endPid, 'each run ends before the next starts');
      assert.ok(BigInt(endNs as string) > BigInt(startNs as string));
      const next = lines[i + 2]?.split(' ')[1];
      if (next)
        assert.ok(BigInt(next) >= BigInt(endNs as string), 'the next run started after this one ended');
    }
  });

  test('--no-wait on a held lock exits 75 at once, naming the holder; --wait ran out too', async () => {
    const dir = workDir();
    const lock = name();
    const holder = cli(['run', lock, '--', 'sh', '-c', HOLD], env(dir));
    await fileAppears(join(dir, 'ready'), holder);
    const busy = cli(['run', lock, '--no-wait', '--', 'sh', '-c', 'echo ran > "$DIR/ran"'], env(dir));
    assert.equal(await busy.exited, EXIT.busy);
    // Named by its label: this host and the holding locksmith process's PID.
    assert.match(
      busy.stderr,
      new RegExp(`^locksmith: "${lock}" is busy \\(held by ${escapeRegExp(hostname())}:\\d+\\)\\n$`),
    );
    const waited = cli(['run', lock, '--wait', '300', '--', 'true'], env(dir));
    assert.equal(await waited.exited, EXIT.busy);
    assert.match(waited.stderr, /is busy .*after waiting 300 ms/);
    writeFileSync(join(dir, 'stop'), '');
    assert.equal(await holder.exited, 0);
    assert.throws(() => readFileSync(join(dir, 'ran')), 'the busy run never ran its command');
  });

  test('a command outliving several TTLs keeps the lock; the environment carries name, fencing token and validity', async () => {
    const dir = workDir();
    const lock = name();
    // 1.2 s: at 600 ms the run's watchdog (it extends at a third of the TTL) fell behind at a load
    // average of 20, and the lock expired under the command.
    const ttlMs = 1_200;
    const run = cli(['run', lock, '--ttl', String(ttlMs), '--', 'sh', '-c', HOLD], env(dir));
    await fileAppears(join(dir, 'ready'), run);
    const vars = envOf(dir);
    assert.equal(vars.LOCKSMITH_NAME, lock);
    assert.equal(vars.LOCKSMITH_TTL_MS, String(ttlMs));
    assert.ok(Number(vars.LOCKSMITH_VALIDITY_MS) > 0 && Number(vars.LOCKSMITH_VALIDITY_MS) <= ttlMs);
    assert.equal(vars.LOCKSMITH_FENCING_TOKEN, await redis.get(`locksmith:{${lock}}:fence`));
    const until4Ttls = Date.now() + 4 * ttlMs;
    while (Date.now() < until4Ttls) {
      assert.equal(
        ownerTokenOf(await redis.get(`locksmith:{${lock}}`)),
        vars.LOCKSMITH_TOKEN,
        'still held by the run',
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    writeFileSync(join(dir, 'stop'), '');
    assert.equal(await run.exited, 0);
    assert.equal(
      ownerTokenOf(await redis.get(`locksmith:{${lock}}`)),
      '',
      'released when the command exited',
    );
  });

  test("SIGTERM to locksmith reaches the command; the lock is released and the command's exit code returned", async () => {
    const dir = workDir();
    const lock = name();
    const command = `trap 'echo got TERM > "$DIR/term"; exit 7' TERM; ${HOLD}`;
    const run = cli(['run', lock, '--', 'sh', '-c', command], env(dir));
    await fileAppears(join(dir, 'ready'), run);
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 7);
    assert.equal(readFileSync(join(dir, 'term'), 'utf8'), 'got TERM\n');
    assert.equal(ownerTokenOf(await redis.get(`locksmith:{${lock}}`)), '');
  });

  test('a lock lost because its key was deleted stops the command (SIGTERM) and exits 76', async () => {
    const dir = workDir();
    const lock = name();
    const run = cli(['run', lock, '--ttl', '900', '--', 'sh', '-c', HOLD_UNTIL_TERM], env(dir));
    await fileAppears(join(dir, 'ready'), run);
    await redis.del(`locksmith:{${lock}}`);
    assert.equal(await run.exited, EXIT.lost);
    assert.equal(readFileSync(join(dir, 'term'), 'utf8'), 'stopped\n');
    assert.match(
      run.stderr,
      new RegExp(
        `^locksmith: lost the lock "${lock}" .*stopping the command's process group with SIGTERM$`,
        'm',
      ),
    );
  });

  test('a lock lost because Redis was silent past the TTL stops the command, with --lost-signal and SIGKILL after --grace', async () => {
    const dir = workDir();
    const lock = name();
    // Ignores SIGINT: only the SIGKILL after the grace period ends it.
    const command = `trap 'echo INT > "$DIR/int"' INT; ${HOLD}`;
    const args = [
      'run',
      lock,
      '--ttl',
      '600',
      '--lost-signal',
      'INT',
      '--grace',
      '300',
      '--',
      'sh',
      '-c',
      command,
    ];
    const run = cli(args, env(dir));
    await fileAppears(join(dir, 'ready'), run);
    server.pause();
    try {
      assert.equal(await run.exited, EXIT.lost);
    } finally {
      server.resume();
    }
    assert.equal(readFileSync(join(dir, 'int'), 'utf8'), 'INT\n');
    assert.match(run.stderr, /stopping the command's process group with SIGINT/);
    assert.match(run.stderr, /did not exit within 300 ms; SIGKILL/);
  });

  test('run --kind semaphore --limit 2: two run at once, the third is busy', async () => {
    const [a, b, c] = [workDir(), workDir(), workDir()];
    const lock = name();
    const sem = (dir: string, ...extra: string[]) =>
      cli(['run', lock, '--kind', 'semaphore', '--limit', '2', ...extra, '--', 'sh', '-c', HOLD], env(dir));
    const first = sem(a);
    const second = sem(b);
    await fileAppears(join(a, 'ready'), first);
    await fileAppears(join(b, 'ready'), second);
    assert.equal(await sem(c, '--no-wait').exited, EXIT.busy);
    const status = cli(['status', lock, '--json'], env(a));
    assert.equal(await status.exited, 0, status.stderr);
    const view = JSON.parse(status.stdout);
    assert.equal(view.kind, 'semaphore');
    assert.equal(view.holders.length, 2);
    writeFileSync(join(a, 'stop'), '');
    writeFileSync(join(b, 'stop'), '');
    assert.deepEqual(await Promise.all([first.exited, second.exited]), [0, 0]);
  });

  test('status shows the holder (label when the server stores one, else the owner token), time left and waiters; --json for scripts', async () => {
    const dir = workDir();
    const lock = name();
    const run = cli(['run', lock, '--kind', 'fair', '--', 'sh', '-c', HOLD], env(dir));
    await fileAppears(join(dir, 'ready'), run);
    const token = envOf(dir).LOCKSMITH_TOKEN as string;
    // One waiter, queued behind the run.
    const waiterClient = new Redis(server.url);
    // It waits past the test's last status (each status a process start: seconds under load; at
    // 30 s it had timed out and left the queue before the last one).
    const waiter = new FairMutex(waiterClient, lock).acquire({ timeoutMs: 300_000 });
    waiter.catch(() => {});
    try {
      await until(
        async () => {
          const status = cli(['status', lock, '--json'], env(dir));
          await status.exited;
          return JSON.parse(status.stdout).queueLength === 1;
        },
        'the waiter is queued',
        120_000,
      );
      const json = cli(['status', lock, '--json'], env(dir));
      assert.equal(await json.exited, 0);
      const view = JSON.parse(json.stdout);
      assert.equal(view.name, lock);
      assert.equal(view.kind, 'mutex');
      assert.equal(view.locked, true);
      assert.equal(view.holders[0].token, token);
      assert.ok(view.holders[0].remainingTtlMs > 0);
      assert.equal(String(view.lastFencingToken), envOf(dir).LOCKSMITH_FENCING_TOKEN);
      const text = cli(['status', lock], env(dir));
      assert.equal(await text.exited, 0);
      // The run's lease carries the default label: this host and the locksmith process's PID.
      assert.match(view.holders[0].label, new RegExp(`^${escapeRegExp(hostname())}:\\d+$`));
      const holderShown = view.holders[0].label as string;
      assert.match(text.stdout, new RegExp(`^holder +${escapeRegExp(holderShown)}.* left`, 'm'));
      assert.match(text.stdout, /^state +held$/m);
      assert.match(text.stdout, /^waiting +1$/m);
      assert.ok(!text.stdout.includes('\x1b['), 'no colours when stdout is not a TTY');
    } finally {
      writeFileSync(join(dir, 'stop'), '');
      await run.exited;
      await (await waiter.catch(() => undefined))?.release();
      waiterClient.disconnect();
    }
  });

  test('list finds every lock kind with SCAN, filters by pattern, and --held / --json', async () => {
    const tag = name();
    const client = new Redis(server.url);
    const leases: Lease[] = [];
    try {
      leases.push(await new FairMutex(client, `${tag}:fair`).acquire());
      // Held twice: a ReentrantMutex held once has a Mutex's layout, and is listed as one.
      const owner = new LockOwner();
      const reentrant = new ReentrantMutex(client, `${tag}:reentrant`);
      leases.push(await reentrant.acquire({ owner }), await reentrant.acquire({ owner }));
      leases.push(await new Semaphore(client, `${tag}:sem`, { limit: 3 }).acquire({ permits: 2 }));
      leases.push(await new ReadWriteLock(client, `${tag}:rw`).writeLock().acquire());
      await (await new FairMutex(client, `${tag}:free`).acquire()).release();
      await redis.set('unrelated-key', 'x');

      const json = cli(['list', `${tag}:*`, '--json'], { REDIS_URL: server.url });
      assert.equal(await json.exited, 0, json.stderr);
      const kinds = Object.fromEntries(
        (JSON.parse(json.stdout) as { name: string; kind: string }[]).map((v) => [v.name, v.kind]),
      );
      assert.deepEqual(kinds, {
        [`${tag}:fair`]: 'mutex',
        [`${tag}:free`]: 'free',
        [`${tag}:reentrant`]: 'reentrant',
        [`${tag}:rw`]: 'read-write',
        [`${tag}:sem`]: 'semaphore',
      });
      const held = cli(['list', `${tag}:*`, '--held'], { REDIS_URL: server.url });
      assert.equal(await held.exited, 0);
      const lines = held.stdout.trim().split('\n');
      assert.match(lines[0] as string, /^NAME +KIND +STATE +HOLDER +LEFT +WAITING$/);
      assert.equal(lines.length, 5, held.stdout);
      assert.ok(!held.stdout.includes(`${tag}:free`));
      assert.match(held.stdout, new RegExp(`^${tag}:sem +semaphore +held +\\S+`, 'm'));
      const none = cli(['list', `${tag}:nothing*`], { REDIS_URL: server.url });
      assert.equal(await none.exited, 0);
      assert.match(none.stdout, /^no locks match/);
    } finally {
      for (const lease of leases) await lease.release();
      client.disconnect();
    }
  });

  test('release --force frees a held lock and says who held it; the run that held it is stopped as lost', async () => {
    const dir = workDir();
    const lock = name();
    const run = cli(['run', lock, '--ttl', '900', '--', 'sh', '-c', HOLD_UNTIL_TERM], env(dir));
    await fileAppears(join(dir, 'ready'), run);
    const token = envOf(dir).LOCKSMITH_TOKEN as string;

    const refused = cli(['release', lock], env(dir));
    assert.equal(await refused.exited, EXIT.usage);
    assert.match(refused.stderr, /add --force/);

    const release = cli(['release', lock, '--force', '--json'], env(dir));
    assert.equal(await release.exited, 0, release.stderr);
    const result = JSON.parse(release.stdout);
    assert.equal(result.released, true);
    assert.equal(result.holders[0].token, token);
    assert.equal(ownerTokenOf(await redis.get(`locksmith:{${lock}}`)), '');
    assert.equal(await run.exited, EXIT.lost);

    const again = cli(['release', lock, '--force'], env(dir));
    assert.equal(await again.exited, 0);
    assert.match(again.stdout, /is not held: nothing to release/);
  });

  test('release --force asks on a terminal: "n" keeps the lock, "y" releases it and names the holder', async () => {
    const lock = name();
    const client = new Redis(server.url);
    const lease = await new FairMutex(client, lock).acquire();
    try {
      const no = cliInTerminal(['release', lock, '--force'], { REDIS_URL: server.url }, 'n\n');
      assert.equal(await no.exited, 1);
      assert.match(plain(no.stdout), new RegExp(`Release "${lock}", held by ${escapeRegExp(OUR_LABEL)}`));
      assert.equal(ownerTokenOf(await redis.get(`locksmith:{${lock}}`)), lease.token);
      const yes = cliInTerminal(['release', lock, '--force'], { REDIS_URL: server.url }, 'y\n');
      assert.equal(await yes.exited, 0);
      assert.match(plain(yes.stdout), new RegExp(`released "${lock}", held by ${escapeRegExp(OUR_LABEL)}`));
      assert.equal(ownerTokenOf(await redis.get(`locksmith:{${lock}}`)), '');
    } finally {
      await lease.release();
      client.disconnect();
    }
  });

  test('watch in a terminal redraws its screen in place: holder, time left, waiters, acquisitions/s; colours unless NO_COLOR', async () => {
    const tag = name();
    const client = new Redis(server.url);
    const held = await new FairMutex(client, `${tag}:held`).acquire();
    const busy = new FairMutex(client, `${tag}:busy`);
    let churning = true;
    const churn = (async () => {
      while (churning) await (await busy.acquire()).release();
    })();
    try {
      const args = ['watch', `${tag}:*`, '--interval', '200', '--count', '6'];
      const screen = cliInTerminal(args, { REDIS_URL: server.url });
      assert.equal(await screen.exited, 0, screen.stdout);
      const frames = screen.stdout.split('\x1b[H\x1b[2J').slice(1);
      assert.equal(frames.length, 6, 'one redraw per refresh, each from the top of the screen');
      assert.ok(screen.stdout.includes('\x1b[31m'), 'colours on a terminal');
      const last = plain(frames.at(-1) as string);
      assert.match(last, new RegExp(`^locksmith watch ${tag}:\\* .* 2 locks, \\d held, [\\d.]+ acq/s$`, 'm'));
      assert.match(last, /^NAME +KIND +HOLDER +LEFT +WAITING +ACQ\/S$/m);
      assert.match(
        last,
        new RegExp(`^${tag}:held +mutex +${escapeRegExp(OUR_LABEL)} +[\\d.]+ s +0 +0\\.0$`, 'm'),
      );
      const busyRow = new RegExp(`^${tag}:busy +\\S+ +\\S+.* +\\d+ +([\\d.]+)$`, 'm').exec(last);
      assert.ok(busyRow, last);
      assert.ok(Number(busyRow[1]) > 0, `acquisitions/s seen for the busy lock: ${busyRow[0]}`);

      const uncoloured = cliInTerminal([...args.slice(0, 4), '--count', '1'], {
        REDIS_URL: server.url,
        NO_COLOR: '1',
      });
      assert.equal(await uncoloured.exited, 0);
      assert.ok(!uncoloured.stdout.includes('\x1b[3'), 'NO_COLOR: no colours');
    } finally {
      churning = false;
      await churn;
      await held.release();
      client.disconnect();
    }
  });

  test('watch --json prints one object per refresh', async () => {
    const tag = name();
    const client = new Redis(server.url);
    const lease = await new Semaphore(client, `${tag}:s`, { limit: 2 }).acquire();
    try {
      const run = cli(['watch', `${tag}*`, '--json', '--interval', '100', '--count', '2'], {
        REDIS_URL: server.url,
      });
      assert.equal(await run.exited, 0, run.stderr);
      const frames = run.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.equal(frames.length, 2);
      const [view] = frames[1].locks;
      assert.equal(view.name, `${tag}:s`);
      assert.equal(view.kind, 'semaphore');
      assert.equal(view.holders[0].token, lease.token);
      assert.equal(typeof view.acquisitionsPerSecond, 'number');
    } finally {
      await lease.release();
      client.disconnect();
    }
  });

  test('node-redis as the client (LOCKSMITH_CLIENT=redis): run, busy, status', async () => {
    const dir = workDir();
    const lock = name();
    const nodeRedis = { ...env(dir), LOCKSMITH_CLIENT: 'redis' };
    // Not 600 ms: at a load average of 20 the run's first attempts went unanswered for longer than
    // that TTL, and it gave up as unreachable.
    const holder = cli(['run', lock, '--ttl', '2000', '--', 'sh', '-c', HOLD], nodeRedis);
    await fileAppears(join(dir, 'ready'), holder);
    assert.equal(await cli(['run', lock, '--no-wait', '--', 'true'], nodeRedis).exited, EXIT.busy);
    const status = cli(['status', lock, '--json'], nodeRedis);
    assert.equal(await status.exited, 0, status.stderr);
    assert.equal(JSON.parse(status.stdout).holders[0].token, envOf(dir).LOCKSMITH_TOKEN);
    writeFileSync(join(dir, 'stop'), '');
    assert.equal(await holder.exited, 0);
    assert.equal(ownerTokenOf(await redis.get(`locksmith:{${lock}}`)), '');
  });

  test("flock's short options: -n with -E, -w in seconds, -c through the shell, --verbose", async () => {
    const dir = workDir();
    const lock = name();
    const holder = cli(['run', lock, '-c', HOLD], env(dir));
    await fileAppears(join(dir, 'ready'), holder);
    const busy = cli(['run', lock, '-n', '-E', '3', '--', 'true'], env(dir));
    assert.equal(await busy.exited, 3, busy.stderr);
    assert.match(busy.stderr, /is busy \(held by /);
    const waited = cli(['run', lock, '-w', '0.3', '--', 'true'], env(dir));
    assert.equal(await waited.exited, EXIT.busy, waited.stderr);
    assert.match(waited.stderr, /is busy .*after waiting 300 ms/);
    // --verbose says whom it waits for; the holder is let go once that was said.
    const verbose = cli(['run', lock, '--verbose', '-c', 'exit 5'], env(dir));
    await until(() => verbose.stderr.includes('waiting for'), 'the verbose run says it waits');
    assert.match(
      verbose.stderr,
      new RegExp(`^locksmith: waiting for "${lock}" \\(held by ${escapeRegExp(hostname())}:\\d+\\)…$`, 'm'),
    );
    writeFileSync(join(dir, 'stop'), '');
    assert.equal(await holder.exited, 0);
    assert.equal(await verbose.exited, 5, verbose.stderr);
    assert.match(
      verbose.stderr,
      new RegExp(`^locksmith: acquired "${lock}" in [\\d.]+ m?s \\(fencing token \\d+\\)$`, 'm'),
    );
  });

  test('-s: readers of a ReadWriteLock run together; -x (the writer) is busy meanwhile', async () => {
    const [a, b] = [workDir(), workDir()];
    const lock = name();
    const first = cli(['run', lock, '-s', '-c', HOLD], env(a));
    const second = cli(['run', lock, '--shared', '-c', HOLD], env(b));
    await fileAppears(join(a, 'ready'), first);
    await fileAppears(join(b, 'ready'), second);
    assert.equal(await cli(['run', lock, '-x', '-n', '--', 'true'], env(a)).exited, EXIT.busy);
    assert.equal(
      await cli(['run', lock, '--kind', 'read-write', '-n', '--', 'true'], env(a)).exited,
      EXIT.busy,
    );
    writeFileSync(join(a, 'stop'), '');
    writeFileSync(join(b, 'stop'), '');
    assert.deepEqual(await Promise.all([first.exited, second.exited]), [0, 0]);
    const writer = cli(['run', lock, '-x', '-n', '--', 'true'], env(a));
    assert.equal(await writer.exited, 0, writer.stderr);
  });

  test('watch and list: a free lock\'s kind is "-", not "free"; "1 lock"', async () => {
    const tag = name();
    const client = new Redis(server.url);
    try {
      await (await new FairMutex(client, `${tag}:free`).acquire()).release();
      const watch = cli(['watch', `${tag}:*`, '--count', '1'], { REDIS_URL: server.url });
      assert.equal(await watch.exited, 0, watch.stderr);
      assert.match(watch.stdout, / 1 lock, 0 held, /);
      assert.match(watch.stdout, new RegExp(`^${tag}:free +- +free `, 'm'));
      const list = cli(['list', `${tag}:*`], { REDIS_URL: server.url });
      assert.equal(await list.exited, 0, list.stderr);
      assert.match(list.stdout, new RegExp(`^${tag}:free +- +free `, 'm'));
    } finally {
      client.disconnect();
    }
  });

  describe('mistakes: one line on stderr, a non-zero exit', () => {
    /**
     * Runs, and checks the one-line error and the exit code. No wall-clock bound here: starting
     * Node takes seconds on a loaded machine; the fixture's exit bound catches a command that hangs.
     */
    async function fails(args: string[], code: number, message: RegExp, env: Record<string, string> = {}) {
      const run = cli(args, { REDIS_URL: server.url, ...env });
      assert.equal(await run.exited, code, run.stderr);
      assert.match(run.stderr, /^locksmith: [^\n]+\n$/, `one line: ${JSON.stringify(run.stderr)}`);
      assert.match(run.stderr, message);
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
    }

    test('a wrong URL: nothing listens there', async () => {
      const port = await freePort();
      await fails(
        ['status', 'x'],
        EXIT.unavailable,
        /cannot connect to Redis at redis:\/\/127\.0\.0\.1:\d+/,
        {
          REDIS_URL: `redis://127.0.0.1:${port}`,
        },
      );
      await fails(['list', '--redis', 'http://nowhere'], EXIT.usage, /not a Redis URL/);
    });

    test('a refused password (ACL user), not shown in the message', async () => {
      await redis.call('ACL', 'SETUSER', 'cli-user', 'on', '>right-password', '~*', '&*', '+@all');
      const url = server.url.replace('redis://', 'redis://cli-user:wrong-password@');
      await fails(
        ['run', 'x', '--redis', url, '--', 'true'],
        EXIT.unavailable,
        /refused the login: WRONGPASS/,
      );
      const run = cli(['status', 'x', '--redis', url]);
      await run.exited;
      assert.ok(!run.stderr.includes('wrong-password'), run.stderr);
    });

    test('a name that is not a lock, and a name with no lock', async () => {
      const lock = name();
      await redis.hset(`locksmith:{${lock}}`, 'a', '1');
      await fails(['status', lock], EXIT.notALock, /is not a lock: locksmith:\{.*\} is a hash/);
      await fails(['release', lock, '--force'], EXIT.notALock, /is not a lock/);
      await fails(['status', name()], EXIT.notALock, /no lock named/);
    });

    test('usage: unknown options, missing arguments, a command that does not exist', async () => {
      await fails(
        ['run', 'x', '--bogus', '--', 'true'],
        EXIT.usage,
        /Unknown option '--bogus'.*see locksmith run --help/,
      );
      await fails(['run', 'x'], EXIT.usage, /needs a command after --/);
      await fails(['run', 'x', '--kind', 'semaphore', '--', 'true'], EXIT.usage, /needs --limit/);
      await fails(['run', 'x', '--ttl', 'soon', '--', 'true'], EXIT.usage, /--ttl expects milliseconds/);
      await fails(['frobnicate'], EXIT.usage, /unknown command "frobnicate"/);
      await fails(['run', 'x', '--', 'no-such-command-here'], 127, /command not found: no-such-command-here/);
    });

    test("usage errors in the command's words, exit 64, before anything is sent to Redis", async () => {
      // Nothing listens at this URL: a command that tried to connect would exit 69, not 64.
      const nowhere = { REDIS_URL: `redis://127.0.0.1:${await freePort()}` };
      const usage = (args: string[], message: RegExp) => fails(args, EXIT.usage, message, nowhere);
      await usage(
        ['run', 'x', '--ttl', '-5', '--', 'true'],
        /--ttl expects a duration of zero or more, got "-5"/,
      );
      await usage(
        ['run', 'x', '--wait', '-1', '--', 'true'],
        /--wait expects a duration of zero or more, got "-1"/,
      );
      await usage(['run', 'x', '-w', '-1', '--', 'true'], /-w expects a duration of zero or more, got "-1"/);
      await usage(
        ['run', 'x', '--ttl', '5', '--', 'true'],
        /--ttl must be at least 100 ms, got "5" \(a bare number is milliseconds: 5s\?\)$/m,
      );
      await usage(['run', '}x', '--', 'true'], /a lock name cannot start with "}", got "}x"/);
      await usage(['status', '}x'], /a lock name cannot start with "}"/);
      await usage(
        ['run', 'x', '--ttl', '1000h', '--', 'true'],
        /--ttl is at most 596h \(about 24 days\), got "1000h"/,
      );
      await usage(['status', 'x', '--timeout', '0'], /--timeout must be at least 1 ms, got "0"/);
      await usage(['watch', '--interval', '-5'], /--interval expects a duration of zero or more, got "-5"/);
      await usage(
        ['run', 'x', '-E', '300', '--', 'true'],
        /-E \(--conflict-exit-code\) expects an exit code from 0 to 255, got "300"/,
      );
      await usage(
        ['run', 'x', '-c', 'true', '--', 'true'],
        /either with -c "<shell command>" or after --, not both/,
      );
      await usage(
        ['run', 'x', '-s', '--kind', 'fair', '--', 'true'],
        /-s and -x are the two sides of --kind read-write, not of --kind fair/,
      );
      await usage(['run', 'x', '-s', '-x', '--', 'true'], /exclude each other/);
      await usage(
        ['run', 'x', '--quiet', '--verbose', '--', 'true'],
        /--quiet and --verbose exclude each other/,
      );
      await usage(['help', 'nosuch'], /unknown command "nosuch"/);
      const run = cli(['run', 'x', '--ttl', '5', '--', 'true'], nowhere);
      await run.exited;
      for (const text of ['argument is ambiguous', 'ttlMs', 'driftFactor', 'hash tag'])
        assert.ok(!run.stderr.includes(text), `the library's words ("${text}") in ${run.stderr}`);
    });

    test('--json: an error is also one JSON object on stdout, with the exit code', async () => {
      const lock = name();
      const run = cli(['status', lock, '--json'], { REDIS_URL: server.url });
      assert.equal(await run.exited, EXIT.notALock);
      const { error } = JSON.parse(run.stdout);
      assert.equal(error.exitCode, EXIT.notALock);
      assert.match(error.message, new RegExp(`^no lock named "${lock}"`));
      const usage = cli(['release', 'x', '--json'], { REDIS_URL: server.url });
      assert.equal(await usage.exited, EXIT.usage);
      assert.equal(JSON.parse(usage.stdout).error.exitCode, EXIT.usage);
    });

    test("--help lists --version, --json for release too, and examples; help <command> is that command's", async () => {
      const top = cli(['--help']);
      assert.equal(await top.exited, 0);
      assert.match(top.stdout, /--version/);
      assert.match(top.stdout, /status, list, release and watch take --json/);
      assert.match(top.stdout, /^Examples:\n {2}locksmith run /m);
      const run = cli(['help', 'run']);
      assert.equal(await run.exited, 0);
      assert.match(run.stdout, /^Usage: locksmith run/);
      assert.match(run.stdout, /-n, --no-wait/);
      assert.match(run.stdout, /-s, --shared/);
      const release = cli(['release', '--help']);
      assert.equal(await release.exited, 0);
      assert.match(release.stdout, /runs on beside the next one/);
    });

    test('--help for every command lists the exit codes', async () => {
      for (const command of ['run', 'status', 'list', 'release', 'watch']) {
        const run = cli([command, '--help']);
        assert.equal(await run.exited, 0);
        assert.match(run.stdout, new RegExp(`^Usage: locksmith ${command}`));
        assert.match(
          run.stdout,
          /Exit codes:[\s\S]* 75 +run: the lock is busy[\s\S]* 76 +run: the lock was lost/,
        );
      }
    });
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
