/**
 * Another library's option name is refused, with its Locksmith equivalent, before anything reaches
 * Redis: checked against the server's own command statistics (the messages are checked exactly in
 * test/unit/option-hints.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FairMutex, Mutex, type RedisClient } from '../../src/index.js';
import { foreignOptionHints } from '../../src/option-hints.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { commandCalls, resetStats } from '../fixtures/commandstats.js';

/** Where a migrating user passes options: lock options, per-call options, both lock kinds. */
const places: [string, (client: RedisClient, options: object) => unknown][] = [
  ['new Mutex()', (c, o) => new Mutex(c, 'x', o)],
  ['mutex.acquire()', (c, o) => new Mutex(c, 'x').acquire(o)],
  ['mutex.using()', (c, o) => new Mutex(c, 'x').using(() => {}, o)],
  ['new FairMutex()', (c, o) => new FairMutex(c, 'x', o)],
  ['fairMutex.acquire()', (c, o) => new FairMutex(c, 'x').acquire(o)],
];

for (const kind of clientKinds) {
  describe(`foreign option names are refused before reaching Redis (${kind.name})`, () => {
    let server: RedisServer;
    let client: TestClient;

    before(async () => {
      server = await startRedis();
      client = await kind.create(server.url);
    });

    after(async () => {
      await client.close();
      await server.stop();
    });

    test('every hinted name, in every place options go: TypeError with the hint, zero commands', async () => {
      const names = Object.keys(foreignOptionHints);
      assert.ok(names.length >= 20);
      await resetStats(server);
      for (const name of names) {
        for (const [place, run] of places) {
          await assert.rejects(
            async () => run(client.client, { [name]: 1 }),
            (error: unknown) => {
              assert.ok(error instanceof TypeError, `${place} { ${name} }: got ${String(error)}`);
              assert.match(error.message, new RegExp(`^Unknown option \`${name}\` in \`options\`; `));
              return true;
            },
          );
        }
      }
      assert.deepEqual(await commandCalls(server), {}, 'no command reached Redis');
    });
  });
}
