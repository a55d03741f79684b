import { randomBytes } from 'node:crypto';
import { ClientClosedError } from '../errors.js';
import type { Script, ScriptText } from '../protocol/script.js';
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
 * A reply that is not the call's own: the script's envelope (protocol/script.ts) did not echo the
 * call's nonce. The client paired the call with another command's reply (node-redis 5 does after a
 * reset: docs/guarantees.md), so the call's own reply went elsewhere and whether it ran is unknown,
 * as when a reply is lost. A connectivity-like failure, not a `LockError`: the caller treats it as
 * an unanswered call (retries while it has time, gives back what the call may have taken).
 */
export class MismatchedReplyError extends Error {
  override readonly name = 'MismatchedReplyError';
  constructor(script: string, reply: unknown) {
    super(
      `The client answered Locksmith's ${script} call with another command's reply (${describe(reply)}): ` +
        'its connection is out of step; whether the call ran is unknown',
    );
  }
}

function describe(reply: unknown): string {
  try {
    const text = JSON.stringify(reply, (_key, value: unknown) =>
      typeof value === 'bigint' ? String(value) : value,
    );
    return text === undefined ? String(reply) : text.slice(0, 120);
  } catch {
    return String(reply);
  }
}

/**
 * Per-call nonces: unique in this process (a counter) and across processes sharing a server (a
 * random prefix), short (a few bytes per call).
 */
const NONCE_PREFIX = randomBytes(6).toString('base64url');
let nonceCount = 0;

/** The reply the envelope wrapped, if it carries `nonce`; else the call was answered with another's. */
function unwrap(reply: unknown, nonce: string, script: Script): unknown {
  if (Array.isArray(reply) && reply.length <= 2 && reply.length >= 1 && String(reply[0]) === nonce)
    // `{nonce, nil}` reaches the client as a one-element array: the body's nil (no script replies one).
    return reply.length === 2 ? reply[1] : null;
  throw new MismatchedReplyError(script.name, reply);
}

/**
 * Runs a script by SHA and falls back to its source when the server's script cache does not have
 * it (a restart, a failover, SCRIPT FLUSH). Written once for every adapter: the fallback is a
 * protocol rule, not a client feature. A closed client is refused before anything is sent, and
 * every rejection is classified (see classifyRedisError). On a client whose replies need checking
 * (`RedisDriver.checksReplies`), every call carries a nonce its script echoes (protocol/script.ts):
 * a reply without it belongs to another command, and the call rejects with a
 * `MismatchedReplyError` instead of trusting it.
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
  let text: ScriptText = script;
  let sentArgs = args;
  let own = (decode ?? identity) as (reply: unknown) => T;
  if (driver.checksReplies) {
    // The call's nonce, one ARGV more than the script's header names: its envelope echoes it.
    nonceCount += 1;
    const nonce = `${NONCE_PREFIX}${nonceCount.toString(36)}`;
    text = script.checked;
    sentArgs = [...args, nonce];
    // A mismatched reply is rejected as such, never decoded: another call's grant is not ours.
    own = decode
      ? (reply: unknown) => decode(unwrap(reply, nonce, script))
      : (reply: unknown) => unwrap(reply, nonce, script) as T;
  }
  const recover = (error: unknown): Promise<T> =>
    fallBack(driver, text, keys, sentArgs, error, resendAsEval).then(own);
  return attempt(() => driver.evalSha(text.sha1, keys, sentArgs)).then(own, recover);
}

function identity(reply: unknown): unknown {
  return reply;
}

/** After a failed EVALSHA: the source on NOSCRIPT (unless closed meanwhile), else the error classified. */
function fallBack(
  driver: RedisDriver,
  script: ScriptText,
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
