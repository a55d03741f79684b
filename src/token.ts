import { randomFillSync } from 'node:crypto';

// Random bytes are drawn 4 KiB at a time: one system call per 256 tokens instead of one per token,
// which shows in a profile of a busy lock (every acquisition needs a fresh token).
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

/** A 128-bit random owner token, hex encoded: unguessable and unique per acquisition. */
export function newToken(): string {
  if (offset + 16 > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const token = pool.toString('hex', offset, offset + 16);
  offset += 16;
  return token;
}
