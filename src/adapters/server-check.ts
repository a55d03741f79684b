import { UnsupportedServerError } from '../errors.js';
import { asArray, asInteger, asString } from '../protocol/replies.js';
import { scripts } from '../protocol/scripts.js';
import { contextOf } from './client-context.js';
import type { RedisDriver } from './driver.js';
import { evalScript } from './eval-script.js';

/**
 * Makes sure the client's server can run Locksmith's scripts (Redis 5 or later) before the first
 * one runs: on an older server the release script would fail after its DEL. Checked once per client
 * and cached; only a definite answer is kept (supported, or too old): a check that failed for any
 * other reason (connection, ACL, a closed client) runs again with the next operation.
 *
 * `lockKey` is the first key of the operation about to run: the probe key is derived from it, so it
 * shares its hash tag and the ACL key patterns a user was given for Locksmith's keys.
 */
export function ensureServerSupported(driver: RedisDriver, lockKey: string | undefined): Promise<void> {
  const context = contextOf(driver);
  if (!context.serverCheck) {
    const check = checkServer(driver, `${lockKey ?? 'locksmith'}:server-check`);
    context.serverCheck = check;
    check.catch((error: unknown) => {
      if (!(error instanceof UnsupportedServerError) && context.serverCheck === check) {
        context.serverCheck = undefined;
      }
    });
  }
  return context.serverCheck;
}

async function checkServer(driver: RedisDriver, probeKey: string): Promise<void> {
  const reply = await evalScript(driver, scripts.serverCheck, [probeKey], []);
  const [supported, detail] = asArray('server-check', reply, 2);
  if (asInteger('server-check', supported) === 1) return;
  throw new UnsupportedServerError(
    `this server has no ZPOPMIN (added in Redis 5.0), so it is older than 5.0 or the command was ` +
      `renamed or disabled. Redis said: ${asString('server-check', detail)}`,
  );
}
