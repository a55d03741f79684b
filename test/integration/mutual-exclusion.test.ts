/** N processes × M increments of a non-atomic counter under the lock give exactly N × M. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { startTogether } from '../../tools/start-barrier.js';
import { bundled } from '../fixtures/bundle.js';
import { clientKinds } from '../fixtures/clients.js';

const worker = join(import.meta.dirname, '../workers/counter-worker.ts');
const PROCESSES = 4;
const INCREMENTS = 40;

/**
 * Runs PROCESSES workers with `args`, released together by a start barrier: without it, staggered
 * process start-up could let one worker finish before the next begins, and the no-lock control
 * would then see no lost update by chance.
 */
async function runWorkers(args: string[]): Promise<void> {
  const children = Array.from({ length: PROCESSES }, () =>
    spawn(process.execPath, [bundled(worker), ...args], { stdio: ['pipe', 'pipe', 'pipe'] }),
  );
  const exits = children.map(
    (child) =>
      new Promise<void>((resolve, reject) => {
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        child.on('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`worker exited ${code}: ${stderr}`)),
        );
      }),
  );
  await startTogether(children);
  await Promise.all(exits);
}

describe('mutual exclusion across processes', () => {
  let server: RedisServer;

  before(async () => {
    server = await startRedis();
  });

  after(async () => {
    await server.stop();
  });

  for (const kind of clientKinds) {
    test(`${PROCESSES} processes × ${INCREMENTS} increments under the lock = ${PROCESSES * INCREMENTS} (${kind.name})`, async () => {
      const name = `counter-${kind.name.replace(/\W/g, '')}`;
      await runWorkers([server.url, kind.name, name, String(INCREMENTS), 'lock']);
      const counter = await server.command('GET', `counter:{${name}}`);
      assert.equal(Number(counter.split('\r\n')[1]), PROCESSES * INCREMENTS);
      const fence = await server.command('GET', `locksmith:{${name}}:fence`);
      // Tokens are max(counter + 1, server µs): the counter no longer counts acquisitions.
      const [seconds] = (await server.command('TIME')).split('\r\n').filter((l) => /^\d+$/.test(l));
      assert.ok(
        Number(fence.split('\r\n')[1]) >= (Number(seconds) - 3_600) * 1e6,
        'tokens are floored at µs',
      );
    });
  }

  test('negative control: the same workers without the lock lose updates', async () => {
    const kind = clientKinds[0];
    assert.ok(kind);
    await runWorkers([server.url, kind.name, 'unlocked', String(INCREMENTS), 'no-lock']);
    const counter = Number((await server.command('GET', 'counter:{unlocked}')).split('\r\n')[1]);
    assert.ok(counter < PROCESSES * INCREMENTS, `without the lock the counter reached ${counter}`);
  });
});
