/**
 * Issue #8: the "Coming from…" tables must be true. Every row's Locksmith code (its snippets, shown
 * verbatim in docs/coming-from.md, the most used in the README) runs against a real Redis, for every
 * client, and its check asserts what the row says; and both tables must be exactly what rows.ts renders.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import type { Env } from '../coming-from/probes.js';
import { rows } from '../coming-from/rows.js';
import { currentTables, snippetSources, TABLE_END, TABLE_START } from '../coming-from/table.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';

test('the README and docs/coming-from.md tables are what rows.ts renders (regenerate with test/coming-from/write-readme.ts)', () => {
  for (const { file, table } of currentTables(rows)) {
    const page = readFileSync(file, 'utf8');
    const start = page.indexOf(TABLE_START);
    const end = page.indexOf(TABLE_END);
    assert.ok(start >= 0 && end > start, `${file} has the generated-table markers`);
    assert.equal(page.slice(start, end + TABLE_END.length), table, file);
  }
});

test('a snippet edited in rows.ts changes the README cell (the table cannot drift from the code)', () => {
  const source = readFileSync(new URL('../coming-from/rows.ts', import.meta.url), 'utf8');
  const edited = source.replace(
    'mutex.acquire({ timeoutMs: Infinity })',
    'mutex.acquire({ timeoutMs: 10_000 })',
  );
  assert.notEqual(edited, source);
  const before = snippetSources(source);
  const after = snippetSources(edited);
  assert.equal(before.length, rows.length, 'one parsed row per exported row');
  assert.notDeepEqual(after, before);
});

for (const kind of clientKinds) {
  describe(`"Coming from…" rows hold (${kind.name})`, () => {
    let server: RedisServer;
    let clients: TestClient[];
    let env: Env;
    let names = 0;

    before(async () => {
      server = await startRedis();
      clients = await Promise.all([
        kind.create(server.url),
        kind.create(server.url),
        kind.create(server.url),
      ]);
      const [client, other, admin] = clients as [TestClient, TestClient, TestClient];
      env = {
        client: client.client,
        other: other.client,
        admin,
        server,
        name: () => {
          names += 1;
          return `row-${names}`;
        },
      };
    });

    after(async () => {
      for (const client of clients) await client.close();
      await server.stop();
    });

    for (const row of rows) {
      test(row.youUsed, () => row.check(row.snippets, env));
    }
  });
}
