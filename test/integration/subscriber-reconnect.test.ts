/**
 * The subscriber connection while it reconnects: waiters come and go (each one's arrival and the
 * last one's leaving tell the connection whether it may keep the process alive) while the server
 * keeps killing it (CLIENT KILL TYPE pubsub). Nothing may pile up on a socket that is gone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { contextFor } from '../../src/adapters/client-context.js';
import { hubFor } from '../../src/adapters/subscriber-hub.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { clientKinds } from '../fixtures/clients.js';
import { nameMaker, until } from '../fixtures/helpers.js';

/** How many times the subscriber connection is killed: each kill is one reconnect window. */
const KILLS = 8;

let server: RedisServer;
before(async () => {
  server = await startRedis();
});
after(async () => {
  await server?.stop();
});

/** How many subscribers the server has on `channel` (PUBSUB NUMSUB). */
async function subscribers(channel: string): Promise<number> {
  const reply = await server.command('PUBSUB', 'NUMSUB', channel);
  return Number(reply.match(/:(\d+)\r\n$/)?.[1] ?? 0);
}

describe('waiters come and go while the subscriber connection reconnects', () => {
  const name = nameMaker('subscriber-reconnect');
  for (const kind of clientKinds) {
    test(`no MaxListenersExceededWarning (${kind.name})`, async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => {
        if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning);
      };
      process.on('warning', onWarning);
      const client = await kind.create(server.url);
      try {
        const hub = hubFor(contextFor(client.client));
        const channel = `${name()}:granted:test`;
        let held = await hub.watch(channel);
        for (let kill = 0; kill < KILLS; kill += 1) {
          await until(async () => (await subscribers(channel)) === 1, 'the channel is subscribed');
          // No waiter left: the connection may let the process exit (the channel lingers).
          held.close();
          await server.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
          // A waiter arrives and leaves, over and over, until the connection is back and subscribed.
          const deadline = performance.now() + 15_000;
          while ((await subscribers(channel)) === 0) {
            assert.ok(performance.now() < deadline, 'the subscriber came back within 15 s');
            const watch = hub.watchIfActive(channel) ?? (await hub.watch(channel));
            watch.close();
          }
          held = hub.watchIfActive(channel) ?? (await hub.watch(channel));
        }
        held.close();
        await hub.close();
        // Node reports the warning on the next tick after the listener that crossed the limit.
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(
          warnings.map((w) => w.message),
          [],
        );
      } finally {
        process.off('warning', onWarning);
        await client.close();
      }
    });
  }
});
