/**
 * What the harnesses know of the RedlockMutex beyond its constructor: the contract's options for a
 * quorum of one, how a fault-suite worker holds it over one client per node and asks the nodes who
 * holds it, and the bench's hand-off-after windows.
 */
import type { LockUnderTest } from '../../bench/impls.js';
import type { BenchCell } from '../../bench/kind-cells.js';
import type { Lease } from '../../src/index.js';
import {
  acquireAs,
  fromLease,
  type HoldContext,
  type LockAdapter,
  type ProbeAnswer,
} from '../../test/faults/toolkit/held-lock.js';
import type { Library } from './registry.js';

/**
 * The contract runs on a quorum of one server: the contract of a lock, over the Redlock's line,
 * hand-off and fan-out (redlock.test.ts covers 3 and 5 servers, slow nodes and the hand-off-after
 * window). The contract's waiters never poll, so: no `retryDelayMs` (50 ms by default for this
 * kind), and places that need no renewal within a test (1 s by default: waiters renew every third);
 * and a node may take a loaded machine's time to answer (50 ms by default).
 */
export const CONTRACT_REDLOCK_OPTIONS = {
  retryDelayMs: Number.POSITIVE_INFINITY,
  waiterTtlMs: 30_000,
  nodeTimeoutMs: 1_000,
} as const;

/** The redis-servers of the fault suite's RedlockMutex (a quorum of 2). */
export const REDLOCK_NODES = 3;

/**
 * A RedlockMutex (public API only: acquire, tryAcquire, the lease, inspect). Its probe asks a
 * second RedlockMutex of the same name, on direct connections to each node (faults at the proxies do
 * not hide what the servers hold), for `inspect()`: held by this lease when a quorum of nodes hold
 * its token, for as long as the quorum-th longest of those holds lives (from each node's PTTL: the
 * lease's validity is below the expiry of every node it won, a quorum); held by another or nobody when the nodes
 * holding this token and those that did not answer cannot make a quorum; otherwise unknown.
 */
export function redlockHolds(lib: Library, at: HoldContext): LockAdapter {
  const { nodes, config } = at;
  if (!nodes) throw new Error(`${config.lock} needs a client per node (WorkerConfig.redisUrls)`);
  const options = { ...at.options, nodeTimeoutMs: config.nodeTimeoutMs };
  const { nodeTimeoutMs, ...rest } = options;
  const lock = new lib.RedlockMutex(nodes.clients, at.name, nodeTimeoutMs === undefined ? rest : options);
  const observer = new lib.RedlockMutex(nodes.probes, at.name, { ttlMs: options.ttlMs });
  const quorum = Math.floor(nodes.clients.length / 2) + 1;
  return {
    acquire: async (signal) => {
      const lease = await acquireAs(config, lock, signal, {});
      return {
        ...fromLease(lease, ''),
        key: undefined,
        probe: () => probeQuorum(observer, lease, quorum),
      };
    },
  };
}

/** Who holds the lock by the nodes' own answers to `observer.inspect()` (see `redlockHolds`). */
async function probeQuorum(
  observer: InstanceType<Library['RedlockMutex']>,
  lease: Lease,
  quorum: number,
): Promise<ProbeAnswer | undefined> {
  const state = await observer.inspect();
  const perNode = state.nodes;
  if (!Array.isArray(perNode)) {
    // Only the quorum's view: enough to say "held by this lease", nothing else.
    if (state.ownerToken !== lease.token) return undefined;
    return { holder: 'self', pttl: state.remainingTtlMs ?? -2 };
  }
  return quorumAnswer(
    perNode.map((n) =>
      n === undefined
        ? undefined
        : {
            mine: n.ownerToken === lease.token ? (n.remainingTtlMs ?? -2) : undefined,
            other: n.ownerToken !== undefined && n.ownerToken !== lease.token,
          },
    ),
    quorum,
  );
}

/** What one node says of a lease: its hold's PTTL there (undefined: none), and whether others hold. */
export interface NodeView {
  readonly mine: number | undefined;
  readonly other: boolean;
}

/**
 * Who holds a lock over several nodes, by each node's view (undefined: it did not answer): this
 * lease, for the quorum-th longest of its holds, when a quorum holds it; unknown while the nodes
 * that hold it and those that did not answer could make a quorum; otherwise another or nobody.
 */
export function quorumAnswer(
  perNode: readonly (NodeView | undefined)[],
  quorum: number,
): ProbeAnswer | undefined {
  const selfTtls = perNode.flatMap((n) => (n?.mine === undefined ? [] : [n.mine])).sort((a, b) => b - a);
  if (selfTtls.length >= quorum) return { holder: 'self', pttl: selfTtls[quorum - 1] as number };
  const unanswered = perNode.filter((n) => n === undefined).length;
  if (selfTtls.length + unanswered >= quorum) return undefined;
  return { holder: perNode.some((n) => n?.other) ? 'other' : 'none', pttl: -2 };
}

/**
 * The bench's RedlockMutex cells: its defaults (strictly first come, first served), and a
 * hand-off-after window (`w<ms>`: a releaser asking again keeps a free lock while the first waiter
 * is younger than that).
 */
export const redlockBenchCells: readonly BenchCell<{ readonly handOffAfterMs?: number }>[] = [
  { section: 'redlock', client: 'ioredis' },
  ...[2, 20].map((windowMs) => ({
    section: 'redlock' as const,
    client: 'ioredis' as const,
    variant: {
      id: `-w${windowMs}`,
      label: `, handOffAfterMs ${windowMs}`,
      options: { handOffAfterMs: windowMs },
    },
  })),
];

/** A bench client of a RedlockMutex: its tries are the attempts its leases report. */
export function redlockCycle(lock: { acquire(): Promise<Lease> }): LockUnderTest {
  let tries = 0;
  return {
    async acquire() {
      const lease = await lock.acquire();
      tries += lease.attempts;
      return () => lease.release();
    },
    tries: () => tries,
  };
}
