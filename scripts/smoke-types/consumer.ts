// A strict consumer of the published declarations (`skipLibCheck: false`): compiled by the tarball
// smoke test under `node16` (as ESM and as CommonJS) and `bundler` resolution. Nothing runs it.
import {
  FairMutex,
  type Lease,
  LockLostError,
  LockOwner,
  Mutex,
  ReadWriteLock,
  type RedisClient,
  RedlockMutex,
  ReentrantMutex,
  Semaphore,
} from 'redis-locksmith';

declare const client: RedisClient;

export async function everyKind(): Promise<number[]> {
  const leases: Lease[] = [
    await new Mutex(client, 'a').acquire(),
    await new FairMutex(client, 'b', { waiterTtlMs: 5_000 }).acquire(),
    await new ReentrantMutex(client, 'c', { owner: new LockOwner() }).acquire(),
    await new Semaphore(client, 'd', { limit: 2 }).acquire({ permits: 1 }),
    await new ReadWriteLock(client, 'e').readLock().acquire(),
    await new RedlockMutex([client, client, client], 'f').acquire(),
  ];
  const fences = leases.map((lease) => lease.fencingToken);
  for (const lease of leases) {
    lease.signal.addEventListener('abort', () => {
      if (lease.signal.reason instanceof LockLostError) console.log(lease.signal.reason.reason);
    });
    await lease.release();
  }
  return fences;
}
