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
const DEMO_BOUND_MS = 60_000;

let server: RedisServer;
before(async () => {
  server = await startRedis();
});
after(async () => {
  await server.stop();
});

function runDemo(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'demo/main.ts')], {
      cwd: root,
      env,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the demo did not finish within ${DEMO_BOUND_MS} ms:\n${stdout}\n${stderr}`));
    }, DEMO_BOUND_MS);
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
