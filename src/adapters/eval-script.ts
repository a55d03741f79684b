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
export function evalScript(
  driver: RedisDriver,
  script: Script,
  keys: readonly string[],
  args: readonly string[],
): Promise<unknown> {
  // Promise chains rather than an async function with nested try blocks: this runs twice per
  // contended acquisition, and the chain allocates less (the common case is one `then`).
  const closed = driver.closedReason();
  if (closed !== undefined) return Promise.reject(new ClientClosedError(closed));
  const classified = (error: unknown) => Promise.reject(classifyRedisError(driver, error));
  return attempt(() => driver.evalSha(script.sha1, keys, args)).then(undefined, (error: unknown) => {
    if (!isNoScript(error)) return classified(error);
    // Closed (or closing) meanwhile: the source must not be written after the caller's QUIT.
    const closedSince = driver.closedReason();
    if (closedSince !== undefined) return Promise.reject(new ClientClosedError(closedSince));
    return attempt(() => driver.eval(script.source, keys, args)).then(undefined, classified);
  });
}

/** Runs `send`, turning a synchronous throw (a client refusing its arguments) into a rejection. */
function attempt(send: () => Promise<unknown>): Promise<unknown> {
  try {
    return send();
  } catch (error) {
    return Promise.reject(error);
  }
}
