import { ClientClosedError } from '../errors.js';
import type { Script } from '../protocol/script.js';
import { classifyRedisError } from './classify-error.js';
import type { RedisDriver } from './driver.js';

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * A call answered NOSCRIPT whose EVAL was not sent, as its caller asked (`evalScript`'s
 * `resendAsEval`): the caller's later call on the same connection had gone out meanwhile, and the
 * EVAL would have run after it. Nothing of this call ran. A connectivity-like failure, not a
 * `LockError`: the caller treats it as a node that did not answer.
 */
export class NotResentError extends Error {
  override readonly name = 'NotResentError';
  constructor() {
    super('NOSCRIPT, and not sent again as EVAL: a later call went out to this server meanwhile');
  }
}

/**
 * Runs a script by SHA and falls back to its source when the server's script cache does not have
 * it (a restart, a failover, SCRIPT FLUSH). Written once for every adapter: the fallback is a
 * protocol rule, not a client feature. A closed client is refused before anything is sent, and
 * every rejection is classified (see classifyRedisError).
 *
 * The EVAL goes out only once the NOSCRIPT answer is in, behind whatever the caller sent on that
 * connection meanwhile: `resendAsEval`, asked then, says whether it may still go (a Redlock's call
 * that a later call of the same token has overtaken must not run after it, see
 * QuorumNodes.inOrder); refused, the call rejects with a `NotResentError`, nothing of it run.
 */
export function evalScript(
  driver: RedisDriver,
  script: Script,
  keys: readonly string[],
  args: readonly string[],
  resendAsEval?: () => boolean,
): Promise<unknown> {
  return evalScriptThen(driver, script, keys, args, undefined, resendAsEval);
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
  resendAsEval?: () => boolean,
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
    const fallback = fallBack(driver, script, keys, args, error, resendAsEval);
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
  resendAsEval: (() => boolean) | undefined,
): Promise<unknown> {
  const classified = (e: unknown) => Promise.reject(classifyRedisError(driver, e));
  if (!isNoScript(error)) return classified(error);
  // Closed (or closing) meanwhile: the source must not be written after the caller's QUIT.
  const closedSince = driver.closedReason();
  if (closedSince !== undefined) return Promise.reject(new ClientClosedError(closedSince));
  if (resendAsEval && !resendAsEval()) return Promise.reject(new NotResentError());
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
