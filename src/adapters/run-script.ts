import type { Script } from '../protocol/script.js';
import type { RedisDriver } from './driver.js';

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Runs a script by SHA and falls back to its source when the server's script cache does not have
 * it (a restart, a failover, SCRIPT FLUSH). Written once for every adapter: the fallback is a
 * protocol rule, not a client feature.
 */
export async function runScript(
  driver: RedisDriver,
  script: Script,
  keys: readonly string[],
  args: readonly string[],
): Promise<unknown> {
  if (keys.length !== script.keyCount) {
    throw new Error(`Script ${script.name} takes ${script.keyCount} keys, was given ${keys.length}`);
  }
  try {
    return await driver.evalSha(script.sha1, keys, args);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return driver.eval(script.source, keys, args);
  }
}

/**
 * Whether an error from Redis might go away on a retry (a dropped connection, a server loading
 * its data or busy), as opposed to a mistake that would fail again (a wrong key type, a Lua error,
 * missing permissions).
 */
export function isTransientRedisError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return !/^(ERR|WRONGTYPE|NOPERM|WRONGPASS|NOAUTH|NOSCRIPT|EXECABORT)\b/.test(error.message);
}
