/**
 * A process that used Locksmith exits as soon as its own work and client are done: no timer or
 * connection of Locksmith's keeps it alive (README: "Locksmith's timers and its waiting connection never
 * keep a process alive"). Every lock kind, every client library; each child waited for a lock, so
 * its subscriber connection was opened.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as sources from '../../src/index.js';
import { lockKinds } from '../../tools/lock-kinds/registry.js';
import { startRedis } from '../../tools/redis-server.js';
import { bundled } from '../fixtures/bundle.js';
import { clientKinds } from '../fixtures/clients.js';
import { nameMaker } from '../fixtures/helpers.js';

const childFile = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/exit-child.ts');

/**
 * What the child reports still keeping it alive once its client is closed (beyond what did before
 * it created the client), and its exit code.
 */
function runChild(args: string[]): Promise<{ alive: string[]; code: number | null }> {
  const child = spawn(process.execPath, [bundled(childFile), ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let alive: string[] | undefined;
  child.on('message', (message) => {
    alive = JSON.parse(String(message)) as string[];
  });
  return new Promise((resolve, reject) => {
    // 'close', not 'exit': it comes once the IPC channel is closed too, so after every message the
    // child wrote was read ('exit' may come first on a busy machine).
    child.once('close', (code) => {
      if (alive) resolve({ alive, code });
      else reject(new Error(`the child exited (${code}) before reporting`));
    });
  });
}

// Three children at once: each is its own process on its own lock name, and the file was the
// longest of npm test run one by one (63 children, about 2 s each).
describe('a process exits once its client is closed', { concurrency: 3 }, () => {
  let server: Awaited<ReturnType<typeof startRedis>>;
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    await server.stop();
  });
  const name = nameMaker('process-exit');

  for (const kind of clientKinds) {
    for (const lockKind of lockKinds(sources)) {
      test(`${lockKind.name} (${kind.name})`, async () => {
        const { alive, code } = await runChild([kind.name, server.url, lockKind.name, name()]);
        // A TCP socket or a timer still referenced after the client's close is Locksmith's: the
        // subscriber connection lingering for the next waiter kept processes up for a second. A
        // pipe is a Valkey GLIDE client's socket to its native core (the subscriber's, for one).
        const ours = alive.filter(
          (resource) => resource === 'TCPSocketWrap' || resource === 'PipeWrap' || resource === 'Timeout',
        );
        assert.deepEqual(ours, [], `still keeping the process alive: ${alive.join(', ')}`);
        assert.equal(code, 0);
      });
    }
  }
});
