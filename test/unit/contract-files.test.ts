/** Every lock kind of the registry has its contract file, and every contract file names a kind. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as sources from '../../src/index.js';
import { lockKinds } from '../../tools/lock-kinds/registry.js';
import { contractFileOf } from '../suites/contract-file.js';

const dir = new URL('../integration/contract/', import.meta.url);

test('each kind of the registry has test/integration/contract/<kind>.test.ts, running its contract', () => {
  const kinds = lockKinds(sources).map((kind) => kind.name);
  const files = readdirSync(dir).filter((file) => file.endsWith('.test.ts'));
  assert.deepEqual(files.sort(), kinds.map(contractFileOf).sort());
  for (const kind of kinds) {
    const text = readFileSync(new URL(contractFileOf(kind), dir), 'utf8');
    assert.ok(
      text.includes(`contractOnEveryClient('${kind}')`),
      `${contractFileOf(kind)} runs ${kind}'s contract`,
    );
  }
});
