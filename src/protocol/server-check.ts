/** Typed call of server-check.lua: can this server run Locksmith's scripts (Redis 5 or later)? */
import { type ScriptCall, scriptCall } from './call.js';
import { asArray, asInteger, asString } from './replies.js';
import { scripts } from './scripts.js';

export type ServerCheckResult =
  | { readonly supported: true /** '' before Redis 7 */; readonly version: string }
  | { readonly supported: false /** the server's own error */; readonly detail: string };

export function serverCheck(probeKey: string): ScriptCall<ServerCheckResult> {
  return scriptCall(scripts.serverCheck, [probeKey], [], (reply) => {
    const [supported, detail] = asArray('server-check', reply, 2);
    const text = asString('server-check', detail);
    return asInteger('server-check', supported) === 1
      ? { supported: true, version: text }
      : { supported: false, detail: text };
  });
}
