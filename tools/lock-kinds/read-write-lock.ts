/**
 * What the harnesses know of the ReadWriteLock beyond its constructor: the fault suite and the bench
 * both take the two sides of one lock (a worker reads or writes; a bench cell has one writer).
 */
import type { Clients, LockUnderTest } from '../../bench/impls.js';
import { type BenchCell, TTL_MS } from '../../bench/kind-cells.js';
import {
  acquireAs,
  fromLease,
  type HoldContext,
  type LockAdapter,
} from '../../test/faults/toolkit/held-lock.js';
import type { Library } from './registry.js';
import { SEMAPHORE_PROBE } from './semaphore.js';

/**
 * A read-write lock as the at-most-K checker sees it: a writer holds every one of these permits and
 * a reader one, so "at most this many at once" is exactly "readers together, a writer alone".
 */
export const READ_WRITE_PERMITS = 2_147_483_647;

/**
 * A ReadWriteLock where a third of the acquisitions write: enough writers to contend with, readers
 * to overlap. A worker of several loops (concurrent callers of one process) writes one time in ten:
 * its readers pass their read holds among them (the read side's local batch) between its writers.
 */
export function readWriteHolds(lib: Library, at: HoldContext): LockAdapter {
  const rw = new lib.ReadWriteLock(at.client, at.name, at.options);
  const writes = (at.config.loops ?? 1) > 1 ? 0.1 : 1 / 3;
  return {
    acquire: async (signal) => {
      const write = Math.random() < writes;
      const side = write ? rw.writeLock() : rw.readLock();
      const taken = 'held by a writer, or a writer held or waited';
      const lease = await acquireAs(at.config, side, signal, {}, taken);
      const permits = write ? READ_WRITE_PERMITS : 1;
      return {
        ...fromLease(lease, rw.readLock().keys.lock),
        permits,
        alone: write,
        probeScript: SEMAPHORE_PROBE,
      };
    },
  };
}

/**
 * A bench client of a ReadWriteLock with one writer: the first client of a cell to ask claims the
 * writer's role (SET NX on a key of the cell's own), every other client reads. Its cells are run
 * with one client more than the readers wanted (`--clients=2,6,11`: 1, 5 and 10 readers).
 */
export function readWriteRoles(lib: Library, clients: Clients, key: string, cell: BenchCell): LockUnderTest {
  const rw = new lib.ReadWriteLock(clients[cell.client], key, { ttlMs: TTL_MS });
  let role: 'read' | 'write' | undefined;
  const claimed = clients.ioredis.set(`${key}:bench-writer`, '1', 'NX').then((ok) => {
    role = ok === 'OK' ? 'write' : 'read';
    return role;
  });
  return {
    role: () => role,
    async acquire() {
      const side = (role ?? (await claimed)) === 'write' ? rw.writeLock() : rw.readLock();
      const lease = await side.acquire();
      return () => lease.release();
    },
  };
}

/** How many of the read-mostly cell's acquisitions read. */
export const READ_SHARE = 0.9;

/**
 * A bench client of a ReadWriteLock where each acquisition reads with probability `READ_SHARE` and
 * writes otherwise (issue 37: P processes × C loops, 90% reads). Its holders overlap by design:
 * the cell counts no overlap (the contract, its tests and the fault suite judge exclusion).
 */
export function readMostly(
  lib: Library,
  clients: Clients,
  key: string,
  cell: BenchCell<{ readonly maxLocalHolds?: number }>,
): LockUnderTest {
  const rw = new lib.ReadWriteLock(clients[cell.client], key, { ttlMs: TTL_MS, ...cell.variant?.options });
  return {
    async acquire() {
      const side = Math.random() < READ_SHARE ? rw.readLock() : rw.writeLock();
      const lease = await side.acquire();
      return () => lease.release();
    },
  };
}
