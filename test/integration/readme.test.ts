/**
 * Every ```ts block of README.md and of the user docs (docs/*.md but docs/design.md) runs, as a
 * user would paste it: as a module of its own (the package name pointing at the sources), in a
 * child process, with REDIS_URL pointing at a redis-server this test started and REDIS_URLS at
 * three more (for the RedlockMutex example, which needs independent servers). A block that imports
 * node-redis runs on node-redis 6 (as written), 5 and 4. Each must exit 0 and by itself (no client
 * left open, no timer keeping the process alive) within a bound, and print what its `// → text`
 * comments say. Blocks marked `// not run: <why>` are only type-checked (scripts/typecheck.mjs);
 * the test says how many it ran.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { asModule, clientVariants, exampleBlocks } from '../../scripts/readme-blocks.mjs';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';

const root = join(import.meta.dirname, '../..');
// Inside the repository, so that the blocks' `ioredis`/`redis` imports resolve from node_modules.
const out = join(root, '.tmp/readme-run');
const packageName = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name as string;
const blocks = exampleBlocks(root);
/** Generous for a loaded machine; a block that leaves a client open never exits at all. */
const EXIT_BOUND_MS = 20_000;

let server: RedisServer;
let redlockServers: RedisServer[] = [];
before(async () => {
  server = await startRedis();
  redlockServers = await Promise.all([startRedis(), startRedis(), startRedis()]);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
});
after(async () => {
  await Promise.all([server, ...redlockServers].map((s) => s.stop()));
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
      env: {
        ...process.env,
        REDIS_URL: server.url,
        REDIS_URLS: redlockServers.map((s) => s.url).join(','),
      },
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

test('README and docs have ```ts examples, and every one of them reads REDIS_URL(S) if it connects', () => {
  const inReadme = blocks.filter((b) => b.file === 'README.md');
  assert.ok(inReadme.length >= 5, `found ${inReadme.length} in README.md`);
  for (const block of blocks) {
    // A block that connected to the default address would reach a Redis this test did not start.
    if (/from '(ioredis|redis)'/.test(block.code))
      assert.match(block.code, /process\.env\.REDIS_URLS?\b/, `${block.id} ignores REDIS_URL`);
  }
});

test('every runnable example exits 0 by itself against the test servers, printing what it says', async (t) => {
  const ran: string[] = [];
  for (const block of blocks) {
    const label = `${block.file} block ${block.index + 1} (line "${block.code.split('\n', 1)[0]}")`;
    if (block.notRunReason !== undefined) {
      t.diagnostic(`${label} not run: ${block.notRunReason}`);
      continue;
    }
    for (const variant of clientVariants(block.code)) {
      const file = join(out, `${block.id}${variant.suffix}.ts`);
      writeFileSync(file, asModule(variant.code, packageName, join(root, 'src/index.ts')));
      const run = await runScript(file);
      const what = `${label}, ${variant.client},`;
      assert.equal(run.timedOut, false, `${what} did not exit within ${EXIT_BOUND_MS} ms:\n${run.output}`);
      assert.equal(run.code, 0, `${what} failed:\n${run.output}`);
      const lines = run.output.split('\n');
      for (const text of block.prints) {
        assert.ok(
          lines.some((line) => line.includes(text)),
          `${what} should print "${text}"; it printed:\n${run.output}`,
        );
      }
      ran.push(`${block.id}${variant.suffix}`);
    }
  }
  const runnable = blocks.filter((b) => b.notRunReason === undefined);
  t.diagnostic(
    `ran ${runnable.length} of ${blocks.length} examples (${blocks.length - runnable.length} marked not run), ` +
      `${ran.length} runs with the node-redis variants: ${ran.join(' ')}`,
  );
  assert.equal(
    ran.length,
    runnable.map((b) => clientVariants(b.code).length).reduce((a, n) => a + n, 0),
  );
  assert.ok(
    ran.some((id) => id.endsWith('-redis4')),
    'a node-redis example ran on node-redis 4',
  );
});
