/**
 * The uncontended floor of each client library: Locksmith's own acquire and release scripts
 * (hand-off-acquire as a single try, hand-off-release), called straight through the client with no lock code
 * around them: no options, waiting loop, lease, watchdog or adapter. Over 1,000 independent keys it
 * shows how many acquire+release cycles the client itself can send per second, so the Locksmith
 * rows beside it read as a share of what that client allows (node-redis' command path costs more
 * than ioredis', whatever calls it). Not a lock anyone should use: nothing expires or extends it.
 */
import type { Redis } from 'ioredis';
import type { NodeRedisClient } from '../src/index.js';
import { handOffAcquire, handOffRelease } from '../src/protocol/hand-off.js';
import { lockKeys } from '../src/protocol/keys.js';
import type { LockUnderTest } from './impls.js';

type Send = (sha1: string, keys: readonly string[], args: readonly string[]) => Promise<unknown>;

function rawLock(send: Send, key: string, ttlMs: number): LockUnderTest {
  const keys = lockKeys('locksmith', key);
  let n = 0;
  return {
    async acquire() {
      n += 1;
      const token = `raw-${key}-${n}`;
      const acquire = handOffAcquire(keys, {
        token,
        ttlMs,
        entryTtlMs: 0,
        grantChannel: `${keys.grantedChannelPrefix}raw`,
        label: '',
        maybeQueued: false,
        barging: true,
      });
      const result = acquire.decode(await send(acquire.script.sha1, acquire.keys, acquire.args));
      if (!result.acquired)
        throw new Error('raw scripts: the key is held (this row is for independent keys)');
      const release = handOffRelease(keys, {
        token,
        skipUnreached: true,
        handOffAfterMs: 0,
        multiNames: true,
      });
      return () => send(release.script.sha1, release.keys, release.args);
    },
  };
}

export function rawScriptsIoredis(client: Redis, key: string, ttlMs: number): LockUnderTest {
  return rawLock((sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args), key, ttlMs);
}

export function rawScriptsNodeRedis(client: NodeRedisClient, key: string, ttlMs: number): LockUnderTest {
  return rawLock(
    (sha1, keys, args) => client.evalSha(sha1, { keys: [...keys], arguments: [...args] }),
    key,
    ttlMs,
  );
}
