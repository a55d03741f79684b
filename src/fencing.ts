import { contextFor } from './adapters/client-context.js';
import type { RedisClient } from './adapters/client-types.js';
import { runScript } from './adapters/run-script.js';
import { type FencedWriteResult, fencedWriteCall } from './protocol/fenced-write.js';
import { checkCount, checkKey } from './validation.js';

export type { FencedWriteResult } from './protocol/fenced-write.js';

/**
 * The resource side of fencing, for a resource kept in Redis: sets `key` to `value` only when
 * `fencingToken` is at least every token accepted for `key` before, atomically. The holder may
 * write as often as it likes under one lease (its token equals the last one accepted); a holder
 * that was paused past its TTL comes back with a lower token than its successor's and its write
 * is refused. Tokens stay increasing across a restart of the lock's Redis without persistence
 * (they are floored at the server's clock in µs), so the refusal holds then too.
 * (The token is remembered in `key:fence`, in the same Cluster slot as `key` when `key` has a hash tag.)
 */
export async function fencedWrite(
  client: RedisClient,
  key: string,
  fencingToken: number,
  value: string,
): Promise<FencedWriteResult> {
  checkKey('key', key);
  checkCount('fencingToken', fencingToken, { min: 1 });
  if (typeof value !== 'string') throw new TypeError('Expected `value` to be a string');
  return runScript(contextFor(client), fencedWriteCall({ key, fencingToken, value }));
}
