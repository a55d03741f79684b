/**
 * A fenced write to a database. A lease cannot stop a holder that freezes (a GC pause, a VM
 * migration) past its TTL and then writes; the database can, if every write carries the lease's
 * fencing token and the row keeps the highest token it accepted. In SQL that is one statement:
 *
 *   UPDATE documents SET body = $1, fence = $2 WHERE id = $3 AND fence <= $2
 *
 * (0 rows updated: a newer holder has written, the write is refused). The "database" here is an
 * in-memory table doing exactly that compare, so the example needs nothing but Redis. Writer A
 * takes the lock and freezes past its TTL, writer B takes the lock and writes, then A wakes up and
 * writes with its older token: refused.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/fenced-write.ts
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-locksmith';

interface Row {
  body: string;
  fence: number;
}

/** A table whose update is a compare-and-write on the fencing token, atomic as one SQL statement. */
class Documents {
  private readonly rows = new Map<string, Row>();

  /** `UPDATE … WHERE id = $id AND fence <= $fence`: true if the row was written. */
  update(id: string, body: string, fence: number): boolean {
    const row = this.rows.get(id);
    if (row !== undefined && row.fence > fence) return false;
    this.rows.set(id, { body, fence });
    return true;
  }

  get(id: string): Row | undefined {
    return this.rows.get(id);
  }
}

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// Two writers, each with its own connection, as two processes would have.
const redisA = new Redis(url);
const redisB = new Redis(url);
const documents = new Documents();
const TTL_MS = 500;

try {
  // No watchdog for A: a frozen process cannot renew its lease either.
  const leaseA = await new Mutex(redisA, 'document:7', { ttlMs: TTL_MS, autoExtend: false }).acquire();
  console.log(`A holds the lock with fencing token ${leaseA.fencingToken}, then freezes`);
  await sleep(TTL_MS * 2); // frozen: A does not look at its signal, its lease expires meanwhile

  const leaseB = await new Mutex(redisB, 'document:7', { ttlMs: 5_000 }).acquire();
  const writtenB = documents.update('7', 'written by B', leaseB.fencingToken);
  console.log(`B holds the lock with fencing token ${leaseB.fencingToken}; its write accepted: ${writtenB}`);
  await leaseB.release();

  // A wakes up and writes as if it still held the lock.
  const writtenA = documents.update('7', 'written by A', leaseA.fencingToken);
  console.log(`A writes with its old fencing token ${leaseA.fencingToken}; accepted: ${writtenA}`);
  console.log(`A's lease says it is held: ${leaseA.isHeld}; release reports: ${await leaseA.release()}`);
  const row = documents.get('7');
  console.log(`document 7: "${row?.body}" (fence ${row?.fence})`);
  process.exitCode = writtenB && !writtenA ? 0 : 1;
} finally {
  await Promise.all([redisA.quit(), redisB.quit()]);
}
