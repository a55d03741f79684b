import { createHash } from 'node:crypto';

/** A script as scripts/embed-lua.mjs embeds it: its text and the arity its header declares. */
export interface EmbeddedScript {
  readonly name: string;
  readonly source: string;
  /** How many KEYS the header names (KEYS[1]..KEYS[keyCount]). */
  readonly keyCount: number;
  /** How many ARGV the header names (ARGV[1]..ARGV[argCount]). */
  readonly argCount: number;
}

/** A script's text as Redis runs it, and its SHA1 as Redis' script cache knows it. */
export interface ScriptText {
  readonly source: string;
  readonly sha1: string;
}

/**
 * A Lua script as Locksmith sends it: the .lua file's text, includes expanded (`source`, `sha1`),
 * and the same inside the call-nonce envelope (`checked`), for clients whose replies need checking.
 */
export interface Script extends EmbeddedScript, ScriptText {
  readonly checked: ScriptText;
}

/**
 * The call-nonce envelope: given one ARGV more than its header names (the adapter's per-call nonce,
 * see evalScript), the script removes it before its body runs and replies `{nonce, reply}`, so the
 * caller can tell its own reply from another command's a client paired with it (node-redis 5 after
 * a reset, docs/guarantees.md). An error reply is returned as is (it is no grant to mistake for
 * another's). Called without it, the script replies as its body. It costs Redis about 15k
 * instructions per call (docs/performance.md), so only clients that need it send it
 * (`RedisDriver.checksReplies`); the others run the plain script.
 */
function withCallNonce(body: string, argCount: number): string {
  return (
    `local locksmith_nonce = nil\nif #ARGV > ${argCount} then locksmith_nonce = table.remove(ARGV) end\n` +
    `local locksmith_reply = (function()\n${body}\nend)()\n` +
    "if locksmith_nonce == nil or (type(locksmith_reply) == 'table' and locksmith_reply.err) then\n" +
    '  return locksmith_reply\nend\nreturn {locksmith_nonce, locksmith_reply}\n'
  );
}

function scriptText(source: string): ScriptText {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

export function defineScript(embedded: EmbeddedScript): Script {
  const checked = Object.freeze(scriptText(withCallNonce(embedded.source, embedded.argCount)));
  return Object.freeze({ ...embedded, ...scriptText(embedded.source), checked });
}
