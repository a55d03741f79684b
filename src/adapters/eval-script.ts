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
  return evalScriptThen(driver, script, keys, args, undefined);
}

/**
 * `evalScript`, with `decode` applied to the reply in the same step (`runScript`'s decoding):
 * one promise and one closure per call, not three promises and four closures (this runs twice
 * per acquisition). A `decode` that throws rejects as it would after `evalScript`.
 */
export function evalScriptThen<T>(
  driver: RedisDriver,
  script: Script,
  keys: readonly string[],
  args: readonly string[],
  decode: ((reply: unknown) => T) | undefined,
): Promise<T> {
  const closed = driver.closedReason();
  if (closed !== undefined) return Promise.reject(new ClientClosedError(closed));
  let sent: Promise<unknown>;
  try {
    sent = driver.evalSha(script.sha1, keys, args);
  } catch (error) {
    // A synchronous throw (a client refusing its arguments) is a rejection like any other.
    sent = Promise.reject(error);
  }
  const recover = (error: unknown): Promise<T> => {
    const fallback = fallBack(driver, script, keys, args, error);
    return (decode ? fallback.then(decode) : fallback) as Promise<T>;
  };
  return (decode ? sent.then(decode, recover) : sent.then(undefined, recover)) as Promise<T>;
}

/** After a failed EVALSHA: the source on NOSCRIPT (unless closed meanwhile), else the error classified. */
function fallBack(
  driver: RedisDriver,
  script: Script,
  keys: readonly string[],
  args: readonly string[],
  error: unknown,
): Promise<unknown> {
  const classified = (e: unknown) => Promise.reject(classifyRedisError(driver, e));
  if (!isNoScript(error)) return classified(error);
  // Closed (or closing) meanwhile: the source must not be written after the caller's QUIT.
  const closedSince = driver.closedReason();
  if (closedSince !== undefined) return Promise.reject(new ClientClosedError(closedSince));
  return attempt(() => driver.eval(script.source, keys, args)).then(undefined, classified);
}

/** Runs `send`, turning a synchronous throw (a client refusing its arguments) into a rejection. */
function attempt(send: () => Promise<unknown>): Promise<unknown> {
  try {
    return send();
  } catch (error) {
    return Promise.reject(error);
  }
}
