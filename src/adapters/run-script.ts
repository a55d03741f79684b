import type { ScriptCall } from '../protocol/call.js';
import { classifyRedisError } from './classify-error.js';
import type { ClientContext } from './client-context.js';
import { evalScriptThen } from './eval-script.js';
import { ensureServerSupported } from './server-check.js';

export { isTransientRedisError } from './classify-error.js';

/**
 * Runs one typed script call on a client and decodes its reply: EVALSHA, falling back to EVAL on
 * NOSCRIPT, once the client's server has been checked (once per client) to be Redis 5 or later.
 *
 * Rejects with a `LockError` for anything a retry cannot fix: `ClientClosedError` (closed or never
 * connected client; checked before sending), `RedisCommandError` (the server refused the script:
 * NOPERM, WRONGTYPE, ERR, ...), `UnsupportedServerError`, `UnexpectedReplyError`. Any other
 * rejection is a connectivity problem the caller may retry while it has time (a `NotResentError`
 * among them: a NOSCRIPT answer whose EVAL `resendAsEval` refused, see evalScript).
 */
export function runScript<Result>(
  context: ClientContext,
  call: ScriptCall<Result>,
  resendAsEval?: () => boolean,
): Promise<Result> {
  // The server is checked once per client; after that a call is one promise chain (a busy lock runs
  // this twice per acquisition, and an async function cost it an extra promise and frame).
  // While calls that waited for the check are still to be sent, a new call queues behind them even
  // if the version is known already: the check records the version before their reactions run, and
  // a call made in between (a release right after an acquisition that settled without this server's
  // reply) went straight out ahead of the acquisition it releases, which then took the lock after
  // its release: a key held by nobody.
  if (context.serverVersion === undefined || context.waitingForCheck > 0) {
    context.waitingForCheck += 1;
    return ensureServerSupported(context, call.keys[0]).then(
      () => {
        context.waitingForCheck -= 1;
        return send(context, call, resendAsEval);
      },
      (error: unknown) => {
        context.waitingForCheck -= 1;
        throw error;
      },
    );
  }
  return send(context, call, resendAsEval);
}

function send<Result>(
  context: ClientContext,
  call: ScriptCall<Result>,
  resendAsEval: (() => boolean) | undefined,
): Promise<Result> {
  // `decode` is a plain function of the reply (scriptCall), passed as is: no closure per call.
  return evalScriptThen(context.driver, call.script, call.keys, call.args, call.decode, resendAsEval);
}

/**
 * `WAIT count timeoutMs` on the connection that ran `key`'s scripts (on a cluster, the one to the
 * primary of its slot): how many replicas acknowledged that connection's writes. Rejects as
 * `runScript` does: a `LockError` for what a retry cannot fix (a closed client, a server that
 * refuses WAIT), the client's error for a failure that may pass.
 */
export function waitForReplicas(
  context: ClientContext,
  key: string,
  count: number,
  timeoutMs: number,
): Promise<number> {
  return context.driver
    .waitForReplicas(key, count, timeoutMs)
    .catch((error: unknown) => Promise.reject(classifyRedisError(context.driver, error)));
}
