/**
 * `npm start` (demo/main.ts) against a redis-server this test started: it exits 0 on its own, and
 * what its summary claims is what Redis holds afterwards (the locked counter exact, the unlocked
 * one short by the updates it says were lost).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';

const root = join(import.meta.dirname, '../..');
/**
 * A hang is a failure too: the demo fails when it prints nothing for this long (a silence, not a
 * total: on a 2-core machine shared with other jobs its five workers took over a minute to start).
 */
const DEMO_SILENCE_MS = 180_000;

let server: RedisServer;
before(async () => {
  server = await startRedis();
});
after(async () => {
  await server.stop();
});

function runDemo(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // A process group of its own: a hung demo is killed with its workers, which would otherwise
    // hold this test's pipes open (and this file's process alive) after the demo is gone.
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'demo/main.ts')], {
      cwd: root,
      env,
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    const hung = () => {
      process.kill(-(child.pid as number), 'SIGKILL');
      reject(new Error(`the demo printed nothing for ${DEMO_SILENCE_MS} ms:\n${stdout}\n${stderr}`));
    };
    let timer = setTimeout(hung, DEMO_SILENCE_MS);
    const progress = () => {
      clearTimeout(timer);
      timer = setTimeout(hung, DEMO_SILENCE_MS);
    };
    child.stdout.on('data', (d) => {
      stdout += d;
      progress();
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      progress();
    });
    // 'close', not 'exit': output still buffered in the pipes is read by then.
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const getNumber = async (key: string) => Number((await server.command('GET', key)).split('\r\n')[1]);

test('the demo runs on REDIS_URL, and its summary matches what Redis holds', async () => {
  const { code, stdout, stderr } = await runDemo({ ...process.env, REDIS_URL: server.url });
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  assert.match(stdout, /Using REDIS_URL=redis:\/\/127\.0\.0\.1:/);

  const unlocked = stdout.match(/^ {2}without the lock +counter +(\d+) of (\d+) +(\d+) updates lost$/m);
  const locked = stdout.match(
    /^ {2}with the lock +counter +(\d+) of (\d+) +exact, fencing tokens increasing: yes$/m,
  );
  assert.ok(unlocked && locked, `summary lines missing:\n${stdout}`);
  const [, unlockedCount, total, lost] = unlocked.map(Number);
  const [, lockedCount, lockedTotal] = locked.map(Number);
  assert.equal(total, lockedTotal, 'the same workload with and without the lock');
  // The workers start behind a barrier, so without the lock they really overlap.
  assert.ok((lost as number) > 0, 'without the lock, updates are lost');
  assert.equal((unlockedCount as number) + (lost as number), total);
  assert.equal(lockedCount, total);
  assert.equal(await getNumber('demo:{counter-unlocked}'), unlockedCount);
  assert.equal(await getNumber('demo:{counter}'), total);

  assert.match(stdout, /^ {2}frozen holder +signal aborted: yes, late write refused: yes$/m);
  assert.match((await server.command('GET', 'demo:{report}')).split('\r\n')[1] ?? '', /^written by B$/);
  assert.match(stdout, /All checks passed\./);
});
