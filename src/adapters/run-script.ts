import type { Script } from '../protocol/script.js';
import type { RedisDriver } from './driver.js';
import { evalScript } from './eval-script.js';
import { ensureServerSupported } from './server-check.js';

export { isTransientRedisError } from './classify-error.js';

/**
 * Runs one of Locksmith's scripts: EVALSHA, falling back to EVAL on NOSCRIPT, once the client's
 * server has been checked (once per client) to be Redis 5 or later.
 *
 * Rejects with a `LockError` for anything a retry cannot fix: `ClientClosedError` (closed or never
 * connected client; checked before sending), `RedisCommandError` (the server refused the script:
 * NOPERM, WRONGTYPE, ERR, ...), `UnsupportedServerError`, `UnexpectedReplyError`. Any other
 * rejection is a connectivity problem the caller may retry while it has time.
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
  await ensureServerSupported(driver, keys[0]);
  return evalScript(driver, script, keys, args);
}
