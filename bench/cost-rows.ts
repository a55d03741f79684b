/**
 * The rows of the cost sheet (bench/cost-sheet.ts) and of the server-instruction count
 * (bench/server-instructions.ts): each of Locksmith's lock kinds from the registry, and after the
 * Mutex, Semaphore and RedlockMutex rows the fastest peers of that kind.
 */
import { lockKinds } from '../tools/lock-kinds/registry.js';
import { type Clients, impls, type LockUnderTest } from './impls.js';
import { leaseCycle, TTL_MS } from './kind-cells.js';
import { locksmith } from './locksmith.js';

/** A row: a lock kind of Locksmith's or a peer's, and the kind it is compared with. */
export interface Row {
  readonly label: string;
  readonly group: string;
  readonly servers: 1 | 3;
  make(clients: Clients, key: string): LockUnderTest;
}

/** The peers of each kind: the single-server locks, the semaphore, the Redlocks over three servers. */
const peerIds: Readonly<Record<string, readonly string[]>> = {
  lock: ['redis-semaphore', 'redlock', 'sesame', 'redlock-universal'],
  semaphore: ['redis-semaphore-semaphore'],
  redlock: ['redis-semaphore-redlock', 'redlock3', 'sesame3', 'redlock-universal3'],
};

export function rows(): Row[] {
  const out: Row[] = [];
  for (const kind of lockKinds(locksmith)) {
    const facet = kind.bench;
    const group = facet?.servers === 3 ? 'redlock' : kind.name === 'Semaphore' ? 'semaphore' : 'lock';
    // The bench's own cell where it is one lock per client (Mutex, FairMutex, Semaphore/3,
    // RedlockMutex over three servers); else the lock as the contract builds it.
    const cell = facet?.readWrite ? undefined : facet?.cells.find((c) => c.client === 'ioredis');
    out.push({
      label: `Locksmith ${facet && cell ? facet.label : kind.name}`,
      group,
      servers: facet?.servers ?? 1,
      make:
        facet && cell
          ? (clients, key) => facet.create(clients, key, cell)
          : (clients, key) => leaseCycle(kind.create(clients.ioredis as never, key, { ttlMs: TTL_MS })),
    });
    if (kind.name === 'RedlockMutex' || kind.name === 'Semaphore' || kind.name === 'FairMutex') {
      for (const id of peerIds[group === 'lock' ? 'lock' : group] ?? []) {
        const spec = impls.find((s) => s.id === id);
        if (spec)
          out.push({ label: `  ${spec.label}`, group, servers: spec.servers ?? 1, make: spec.create });
      }
    }
  }
  return out;
}
