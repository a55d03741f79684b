/** `npm start` with no redis-server on PATH and no REDIS_URL says how to get Redis, without a stack trace. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '../..');

test('the demo without redis-server or REDIS_URL prints how to install or point at Redis', (t) => {
  // A PATH that has node but no redis-server.
  const bin = mkdtempSync(join(tmpdir(), 'locksmith-nopath-'));
  symlinkSync(process.execPath, join(bin, 'node'));
  t.after(() => rmSync(bin, { recursive: true, force: true }));
  const { REDIS_URL: _ignored, ...env } = process.env;
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'demo/main.ts')], {
    cwd: root,
    env: { ...env, PATH: bin },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(result.signal, null, 'exits by itself');
  assert.equal(result.status, 1);
  assert.match(result.stderr, /redis-server is not on PATH and REDIS_URL is not set/);
  assert.match(result.stderr, /sudo apt-get install redis-server/);
  assert.match(result.stderr, /brew install redis/);
  assert.match(result.stderr, /REDIS_URL=redis:\/\/\S+ npm start/);
  assert.doesNotMatch(result.stderr, /^\s+at /m, 'no stack trace');
  assert.doesNotMatch(result.stdout, /Started redis-server/);
});

test('the demo with an unreachable REDIS_URL says so, without a stack trace', () => {
  // Port 1 on loopback: nothing listens there, the connection is refused at once.
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'demo/main.ts')], {
    cwd: root,
    env: { ...process.env, REDIS_URL: 'redis://127.0.0.1:1' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(result.status, 1);
  assert.match(result.stderr, /could not reach REDIS_URL=redis:\/\/127\.0\.0\.1:1/);
  assert.match(result.stderr, /sudo apt-get install redis-server/);
  assert.doesNotMatch(result.stderr, /^\s+at /m, 'no stack trace');
});
