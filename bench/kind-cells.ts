/**
 * The bench's side of the lock-kind registry (tools/lock-kinds/): what a kind's entry says about
 * its cells, how that becomes the implementations bench/impls.ts lists, and the small helpers the
 * entries build their cells with. It builds no lock itself: the entries are handed the library the
 * bench measures (bench/locksmith.ts).
 */
import type { Redis } from 'ioredis';
import { scripts } from '../src/protocol/scripts.js';
import type { Clients, ImplSpec, LockUnderTest } from './impls.js';

/** The TTL of every lock in the bench. */
export const TTL_MS = 10_000;

/** The semaphores' permits (issue #11: limit 3, at 2, 5 and 10 clients). */
export const SEMAPHORE_LIMIT = 3;

/**
 * Where a kind's cells stand in the bench's list (bench/impls.ts), next to the peers they are
 * compared with: cells run and print in list order, and a later cell runs on warmer processes.
 */
export type BenchSection =
  | 'locks'
  | 'fail-fast'
  | 'read-write'
  | 'semaphores'
  | 'redlock'
  | 'redlock-semaphore';

/** The clients of `Clients` that talk to the one server of the single-node cells. */
export type SingleServerClient = 'ioredis' | 'nodeRedis' | 'ioredisFailFast';

/** Each client's part of a cell's id and of its label. */
const clientNames: Record<SingleServerClient, { readonly id: string; readonly label: string }> = {
  ioredis: { id: 'ioredis', label: 'ioredis' },
  nodeRedis: { id: 'node-redis', label: 'node-redis' },
  ioredisFailFast: { id: 'ioredis-failfast', label: 'ioredis, enableOfflineQueue: false' },
};

/** One cell of a kind: the client library it locks with, and where it stands in the list. */
export interface BenchCell<Variant extends object = object> {
  readonly section: BenchSection;
  /** The client (for a cell over three servers: the library of the quorum's clients). */
  readonly client: SingleServerClient;
  /** A configuration of the kind beyond its defaults: its id and label tails, and what `create` needs. */
  readonly variant?: { readonly id: string; readonly label: string; readonly options: Variant };
}

/** A library lock kind's part in the bench. */
export interface BenchFacet<Variant extends object = object> {
  /** The stem of its cells' ids: `locksmith-<id>-<client>` ('fair' → 'locksmith-fair-node-redis'). */
  readonly id: string;
  /** The stem of its cells' labels: `Locksmith <label> (<client>)` ('Semaphore/3'). */
  readonly label: string;
  readonly cells: readonly BenchCell<Variant>[];
  /** As `ImplSpec`: how many hold it at once, over how many servers, whether readers share it. */
  readonly limit?: number;
  readonly servers?: 3;
  readonly readWrite?: boolean;
  /** As `ImplSpec`: it runs only in the P × C cells. */
  readonly pxcOnly?: boolean;
  /** Whether a command sent is one try at the lock (absent: the lock counts its tries itself). */
  readonly isTry?: ImplSpec['isTry'];
  /** One bench client's lock on `key` in `cell`. */
  create(clients: Clients, key: string, cell: BenchCell<Variant>): LockUnderTest;
}

/** A Locksmith try is one acquire script sent (a queued kind's waiter is woken, not polling). */
export function locksmithTry(name: string, firstArg: string | undefined): boolean {
  const acquires = [scripts.handOffAcquire, scripts.semaphoreAcquire, scripts.multiAcquire];
  const texts = acquires.flatMap((script) => [script, script.checked]);
  if (name === 'evalsha') return texts.some((text) => firstArg === text.sha1);
  if (name === 'eval') return texts.some((text) => firstArg === text.source);
  return false;
}

/** The clients of a Redlock cell's three servers (run.ts starts them for `servers: 3` implementations). */
export function quorumOf(clients: Clients): Redis[] {
  if (!clients.quorum) throw new Error('a Redlock cell needs three servers (BENCH_REDLOCK_URLS)');
  return [...clients.quorum];
}

/** A lock whose acquire resolves with a lease: acquire, then release that lease. */
export function leaseCycle(lock: { acquire(): Promise<{ release(): Promise<boolean> }> }): LockUnderTest {
  return {
    async acquire() {
      const lease = await lock.acquire();
      return () => lease.release();
    },
  };
}

/** The implementations of the kinds' cells that stand in `section`, in registry order. */
export function locksmithCells(facets: readonly BenchFacet[], section: BenchSection): ImplSpec[] {
  return facets.flatMap((facet) =>
    facet.cells.filter((cell) => cell.section === section).map((cell) => cellSpec(facet, cell)),
  );
}

function cellSpec(facet: BenchFacet, cell: BenchCell): ImplSpec {
  // The rest of the facet (limit, servers, readWrite, isTry) is the spec's, as it stands.
  const { id, label, cells, create, ...traits } = facet;
  const client = clientNames[cell.client];
  const servers = facet.servers === 3 ? ', 3 servers' : '';
  return {
    id: `locksmith-${id}-${client.id}${cell.variant?.id ?? ''}`,
    label: `Locksmith ${label} (${client.label}${servers}${cell.variant?.label ?? ''})`,
    family: 'locksmith',
    ...traits,
    create: (clients, key) => facet.create(clients, key, cell),
  };
}
