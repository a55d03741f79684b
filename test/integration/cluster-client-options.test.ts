/**
 * A cluster client's own connection options reach Locksmith's connections: a cluster with
 * `requirepass` (every cluster client authenticates its subscriber too) and an ioredis `keyPrefix`
 * with a hash tag (the channel follows the keys' slot).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { clusterClientKinds } from '../fixtures/clients.js';
import { nameMaker } from '../fixtures/helpers.js';
import { type RedisCluster, startCluster } from '../fixtures/redis-cluster.js';

const PASSWORD = 'cluster-secret';
const childFile = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/cluster-waiter-child.ts');

/** How long a child may live after it said it closed its clients: the guarantee is "it exits". */
const EXIT_BOUND_MS = 15_000;

/** Runs cluster-waiter-child.ts; resolves with its report and exit code, or fails if it never exits. */
function runChild(args: string[]): Promise<{ servedMs: number; timeoutMs: number; code: number | null }> {
  const child = spawn(process.execPath, ['--import', 'tsx', childFile, ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let report: { servedMs: number; timeoutMs: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  child.on('message', (message) => {
    report = JSON.parse(String(message));
    timer = setTimeout(() => child.kill('SIGKILL'), EXIT_BOUND_MS);
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!report) reject(new Error(`the child exited (${code}) before reporting`));
      else if (signal === 'SIGKILL')
        reject(
          new Error(
            `the child was still alive ${EXIT_BOUND_MS} ms after closing its clients ` +
              `(its waiter was served ${Math.round(report.servedMs)} ms after the release)`,
          ),
        );
      else resolve({ ...report, code });
    });
  });
}

let cluster: RedisCluster;
before(async () => {
  cluster = await startCluster({ requirepass: PASSWORD });
});
after(async () => {
  await cluster?.stop();
});

describe('a cluster with requirepass', () => {
  const name = nameMaker('cluster-auth');
  for (const kind of clusterClientKinds) {
    test(`a waiter is woken by the release and the process exits (${kind.name})`, async (t) => {
      const address = JSON.stringify({ startupNodes: cluster.startupNodes, password: PASSWORD });
      const { servedMs, timeoutMs, code } = await runChild([kind.name, address, name()]);
      t.diagnostic(`served ${Math.round(servedMs)} ms after the release`);
      // Woken by the hand-off's message, not by its own deadline (the holder's TTL is longer still).
      assert.ok(servedMs < timeoutMs / 2, `served ${Math.round(servedMs)} ms after the release`);
      assert.equal(code, 0);
    });
  }
});
