import { ClientClosedError } from '../errors.js';
import type { Script } from '../protocol/script.js';
import { classifyRedisError } from './classify-error.js';
import type { RedisDriver } from './driver.js';

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Runs a script by SHA and falls back to its source when the server's script cache does not have
 * it (a restart, a failover, SCRIPT FLUSH). Written once for every adapter: the fallback is a
 * protocol rule, not a client feature. A closed client is refused before anything is sent, and
 * every rejection is classified (see classifyRedisError).
 */
export async function evalScript(
  driver: RedisDriver,
  script: Script,
  keys: readonly string[],
  args: readonly string[],
): Promise<unknown> {
  const closed = driver.closedReason();
  if (closed !== undefined) throw new ClientClosedError(closed);
  try {
    try {
      return await driver.evalSha(script.sha1, keys, args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return await driver.eval(script.source, keys, args);
    }
  } catch (error) {
    throw classifyRedisError(driver, error);
  }
}
