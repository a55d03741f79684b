/**
 * What the harnesses know of the RedlockSemaphore beyond its constructor: the contract's options
 * (the RedlockMutex's, a limit of one), how a fault-suite worker holds permits of it over one client
 * per node and asks the nodes who holds them, and its bench cells.
 */
import type { BenchCell } from '../../bench/kind-cells.js';
import type { Lease } from '../../src/index.js';
import {
  acquireAs,
  fromLease,
  type HoldContext,
  type LockAdapter,
} from '../../test/faults/toolkit/held-lock.js';
import { quorumAnswer, REDLOCK_NODES } from './redlock-mutex.js';
import type { Library } from './registry.js';
import { FAULT_SEMAPHORE_LIMIT } from './semaphore.js';

/** The fault suite's RedlockSemaphore: three servers, the Semaphore's limit (1 or 2 permits each). */
export const FAULT_REDLOCK_SEMAPHORE = { nodes: REDLOCK_NODES, limit: FAULT_SEMAPHORE_LIMIT } as const;

/** The bench's RedlockSemaphore: 3 servers, limit 3 (issue 39), against redis-semaphore's. */
export const BENCH_REDLOCK_SEMAPHORE_LIMIT = 3;

/** Its bench cells: 5 and 10 processes contending for 3 permits on 3 servers. */
export const redlockSemaphoreBenchCells: readonly BenchCell[] = [
  { section: 'redlock-semaphore', client: 'ioredis' },
];

/**
 * A RedlockSemaphore of `at.limit` permits over the worker's node clients, each acquisition taking
 * 1 or 2 of them (1 of a limit of 1). Its probe asks a second RedlockSemaphore of the same name, on direct connections
 * to each node, for `inspect()`: held by this lease while a quorum of nodes hold its token, for as
 * long as the quorum-th longest of those holds lives.
 */
export function redlockSemaphoreHolds(lib: Library, at: HoldContext): LockAdapter {
  const { nodes, config } = at;
  if (!nodes) throw new Error(`${config.lock} needs a client per node (WorkerConfig.redisUrls)`);
  // No hand-off-after window: permits go to the queue in arrival order.
  const { handOffAfterMs: _window, ...options } = at.options;
  const nodeTimeout = config.nodeTimeoutMs === undefined ? {} : { nodeTimeoutMs: config.nodeTimeoutMs };
  const semaphore = new lib.RedlockSemaphore(nodes.clients, at.name, {
    ...options,
    ...nodeTimeout,
    limit: at.limit,
  });
  const observer = new lib.RedlockSemaphore(nodes.probes, at.name, { ttlMs: options.ttlMs, limit: at.limit });
  const quorum = Math.floor(nodes.clients.length / 2) + 1;
  return {
    acquire: async (signal) => {
      const permits = at.limit > 1 && Math.random() < 0.5 ? 2 : 1;
      const lease = await acquireAs(config, semaphore, signal, { permits }, 'too few permits free');
      return {
        ...fromLease(lease, ''),
        key: undefined,
        permits,
        probe: () => probePermits(observer, lease, quorum),
      };
    },
  };
}

/** Whether a quorum of nodes hold `lease`'s permits, by their own answers (see `quorumAnswer`). */
async function probePermits(
  observer: InstanceType<Library['RedlockSemaphore']>,
  lease: Lease,
  quorum: number,
) {
  const { nodes } = await observer.inspect();
  return quorumAnswer(
    nodes.map((n) => {
      if (n === undefined) return undefined;
      const mine = n.holders.find((h) => h.token === lease.token);
      return { mine: mine?.remainingTtlMs, other: n.holders.some((h) => h.token !== lease.token) };
    }),
    quorum,
  );
}
