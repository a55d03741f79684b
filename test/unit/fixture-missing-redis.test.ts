/** Without redis-server on PATH, the fixture fails at once and says how to install it. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

test('a missing redis-server is reported with the install command', (t) => {
  // A PATH that has node but no redis-server.
  const bin = mkdtempSync(join(tmpdir(), 'locksmith-nopath-'));
  symlinkSync(process.execPath, join(bin, 'node'));
  t.after(() => rmSync(bin, { recursive: true, force: true }));
  const fixture = join(import.meta.dirname, '../../tools/redis-server.ts');
  const started = Date.now();
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '-e', `import(${JSON.stringify(fixture)}).then((m) => m.startRedis())`],
    { env: { ...process.env, PATH: bin }, encoding: 'utf8', cwd: dirname(fixture) },
  );
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /redis-server was not found on PATH/);
  assert.match(result.stderr, /apt-get install redis-server/);
  assert.ok(Date.now() - started < 10_000, 'fails at once');
});
