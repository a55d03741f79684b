import { UnsupportedServerError } from '../errors.js';
import { serverCheck } from '../protocol/server-check.js';
import type { ClientContext } from './client-context.js';
import { evalScript } from './eval-script.js';

/**
 * Makes sure the client's server can run Locksmith's scripts (Redis 5 or later) before the first
 * one runs: on an older server the release script would fail after its DEL. Checked once per client
 * and cached (with the server's version); only a definite answer is kept (supported, or too old): a
 * check that failed for any other reason (connection, ACL, a closed client) runs again with the next
 * operation.
 *
 * `lockKey` is the first key of the operation about to run: the probe key is derived from it, so it
 * shares its hash tag and the ACL key patterns a user was given for Locksmith's keys.
 */
export function ensureServerSupported(context: ClientContext, lockKey: string | undefined): Promise<void> {
  if (!context.serverCheck) {
    const check = checkServer(context, `${lockKey ?? 'locksmith'}:server-check`);
    context.serverCheck = check;
    check.catch((error: unknown) => {
      if (!(error instanceof UnsupportedServerError) && context.serverCheck === check) {
        context.serverCheck = undefined;
      }
    });
  }
  return context.serverCheck;
}

async function checkServer(context: ClientContext, probeKey: string): Promise<void> {
  const call = serverCheck(probeKey);
  const result = call.decode(await evalScript(context.driver, call.script, call.keys, call.args));
  if (result.supported) {
    context.serverVersion = result.version;
    return;
  }
  throw new UnsupportedServerError(
    `this server has no ZPOPMIN (added in Redis 5.0), so it is older than 5.0 or the command was ` +
      `renamed or disabled. Redis said: ${result.detail}`,
  );
}
