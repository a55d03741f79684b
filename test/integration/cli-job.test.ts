/**
 * `locksmith run` stops the whole job, not only the process it started: a shell with a grandchild
 * `sleep` under `run`, stopped by a lost lock, by a signal forwarded to `locksmith`, by `locksmith`
 * itself being SIGKILLed (its guard stops the job), and leftovers of a command that exited. Each
 * checks, by PID in /proc, that no process of the job is still running (a zombie is not: PID 1 of a
 * container may never reap it). Linux only: /proc is how the test sees the processes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { cli, fileAppears, killAllCli } from '../fixtures/cli.js';
import { nameMaker, until } from '../fixtures/helpers.js';

const EXIT_LOST = 76;

/** A shell that records its PID and its child's, a `sleep` (a grandchild of locksmith), and waits. */
const TREE = `echo $$ > "$DIR/sh"; sleep 301 & echo $! > "$DIR/sleep"; : > "$DIR/ready"; wait`;

/** Whether `pid` is a running process (a zombie has finished running). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe('locksmith run stops the whole job', { skip: process.platform !== 'linux' }, () => {
  let server: RedisServer;
  let redis: Redis;
  const dirs: string[] = [];
  const jobPids: number[] = [];
  const name = nameMaker('cli-job');

  /** Starts `run` over the tree; resolves once the tree runs, with its two PIDs. */
  async function startTree(args: readonly string[], script = TREE) {
    const dir = mkdtempSync(join(tmpdir(), 'locksmith-job-'));
    dirs.push(dir);
    const run = cli(['run', ...args, '--', 'sh', '-c', script], { REDIS_URL: server.url, DIR: dir });
    await fileAppears(join(dir, 'ready'), run);
    const pids = ['sh', 'sleep'].map((file) => Number(readFileSync(join(dir, file), 'utf8')));
    jobPids.push(...pids);
    for (const pid of pids) assert.ok(running(pid), `process ${pid} of the job runs`);
    return { run, pids, dir };
  }

  const survivors = (pids: readonly number[]) => pids.filter(running);

  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    killAllCli();
    // A failed test must not leave its `sleep 301` behind.
    for (const pid of jobPids.filter(running)) process.kill(pid, 'SIGKILL');
    redis.disconnect();
    await server.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('a lost lock stops every process of the job before run exits 76', async () => {
    const lock = name();
    const { run, pids } = await startTree([lock, '--ttl', '900']);
    await redis.del(`locksmith:{${lock}}`);
    assert.equal(await run.exited, EXIT_LOST, run.stderr);
    assert.deepEqual(survivors(pids), [], `no process of the job runs once run exited:\n${run.stderr}`);
    assert.match(run.stderr, /stopping the command's process group with SIGTERM/);
  });

  test('a signal forwarded to locksmith reaches every process of the job', async () => {
    const { run, pids } = await startTree([name()]);
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 128 + 15, run.stderr);
    assert.deepEqual(survivors(pids), [], run.stderr);
  });

  test('locksmith SIGKILLed: its guard stops the job (no process of it runs on)', async () => {
    const lock = name();
    const { run, pids } = await startTree([lock, '--ttl', '60s']);
    run.child.kill('SIGKILL');
    await run.exited;
    // The guard stops the job at once with SIGTERM (SIGKILL after --grace, 10 s): the bound here is
    // only how long this busy machine may take to run it.
    await until(() => survivors(pids).length === 0, `the job's processes ${pids} are gone`, 20_000);
  });

  test("processes the command left in its group are stopped before run exits with the command's code", async () => {
    const script = `sleep 301 & echo $! > "$DIR/sleep"; echo $$ > "$DIR/sh"; : > "$DIR/ready"; read _ < "$DIR/go"`;
    const lock = name();
    const dir = mkdtempSync(join(tmpdir(), 'locksmith-job-'));
    dirs.push(dir);
    // "go" is a FIFO: the command exits once this test opened it, leaving its `sleep` behind.
    execFileSync('mkfifo', [join(dir, 'go')]);
    const run = cli(['run', lock, '--', 'sh', '-c', `${script}; exit 3`], {
      REDIS_URL: server.url,
      DIR: dir,
    });
    await fileAppears(join(dir, 'ready'), run);
    const sleep = Number(readFileSync(join(dir, 'sleep'), 'utf8'));
    jobPids.push(sleep);
    assert.ok(running(sleep));
    closeSync(openSync(join(dir, 'go'), 'w'));
    assert.equal(await run.exited, 3, run.stderr);
    assert.equal(running(sleep), false, `the leftover sleep ${sleep} is stopped:\n${run.stderr}`);
    assert.match(run.stderr, new RegExp(`left 1 process in its group \\(${sleep}\\)`));
  });
});
