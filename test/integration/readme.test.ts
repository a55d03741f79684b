/**
 * Every ```ts block of README.md runs, as a user would paste it: as a module of its own (the
 * package name pointing at the sources), in a child process, with REDIS_URL pointing at a
 * redis-server this test started. Each must exit 0 and by itself (no client left open, no timer
 * keeping the process alive) within a bound. Blocks marked `// not run: <why>` are only
 * type-checked (scripts/check-readme.mjs); the test says how many it ran.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { asModule, readmeBlocks } from '../../scripts/readme-blocks.mjs';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';

const root = join(import.meta.dirname, '../..');
// Inside the repository, so that the blocks' `ioredis`/`redis` imports resolve from node_modules.
const out = join(root, '.tmp/readme-run');
const packageName = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name as string;
const blocks = readmeBlocks(readFileSync(join(root, 'README.md'), 'utf8'));
/** Generous for a loaded machine; a block that leaves a client open never exits at all. */
const EXIT_BOUND_MS = 20_000;

let server: RedisServer;
before(async () => {
  server = await startRedis();
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
});
after(async () => {
  await server.stop();
});

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
}

function runScript(file: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      env: { ...process.env, REDIS_URL: server.url },
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, EXIT_BOUND_MS);
    // 'close', not 'exit': output still buffered in the pipes is read by then.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output, timedOut });
    });
  });
}

test('README has ```ts examples, and every one of them reads REDIS_URL if it connects', () => {
  assert.ok(blocks.length >= 5, `found ${blocks.length}`);
  for (const block of blocks) {
    // A block that connected to the default address would reach a Redis this test did not start.
    if (/from '(ioredis|redis)'/.test(block.code))
      assert.match(block.code, /process\.env\.REDIS_URL/, `block ${block.index + 1} ignores REDIS_URL`);
  }
});

test('every runnable README example exits 0 by itself against the test server', async (t) => {
  const ran: number[] = [];
  for (const block of blocks) {
    const label = `block ${block.index + 1} (line "${block.code.split('\n', 1)[0]}")`;
    if (block.notRunReason !== undefined) {
      t.diagnostic(`${label} not run: ${block.notRunReason}`);
      continue;
    }
    const file = join(out, `block${String(block.index + 1).padStart(2, '0')}.ts`);
    writeFileSync(file, asModule(block.code, packageName, join(root, 'src/index.ts')));
    const run = await runScript(file);
    assert.equal(run.timedOut, false, `${label} did not exit within ${EXIT_BOUND_MS} ms:\n${run.output}`);
    assert.equal(run.code, 0, `${label} failed:\n${run.output}`);
    ran.push(block.index + 1);
  }
  const skipped = blocks.length - ran.length;
  t.diagnostic(`ran ${ran.length} of ${blocks.length} README examples (${skipped} marked not run)`);
  assert.equal(ran.length, blocks.filter((b) => b.notRunReason === undefined).length);
  assert.ok(ran.length > 0);
});
