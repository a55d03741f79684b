import type { Script } from './script.js';

/**
 * One invocation of a script, built from named parameters by a protocol module: what to send
 * (KEYS and ARGV in the order the script's header gives) and how to read the reply. Lock kinds,
 * and a quorum layer fanning the same call out to several servers, only ever see these.
 */
export interface ScriptCall<Result> {
  readonly script: Script;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  /** Turns the raw reply into the typed result; throws `UnexpectedReplyError` on a malformed one. */
  decode(reply: unknown): Result;
}

/**
 * Builds a call, checking it against the script's header: a protocol module that passes the wrong
 * number of keys or arguments is a bug, caught on its first call (and by test/unit/protocol.test.ts).
 */
export function scriptCall<Result>(
  script: Script,
  keys: readonly string[],
  args: readonly string[],
  decode: (reply: unknown) => Result,
): ScriptCall<Result> {
  if (keys.length !== script.keyCount || args.length !== script.argCount) {
    throw new Error(
      `${script.name} takes ${script.keyCount} keys and ${script.argCount} arguments, ` +
        `was given ${keys.length} and ${args.length}`,
    );
  }
  return { script, keys, args, decode };
}
