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

/**
 * A Lua script as Locksmith sends it, with its SHA1 as Redis' script cache knows it. `source` is
 * the .lua text (`body`) inside the call-nonce envelope (`withCallNonce`).
 */
export interface Script extends EmbeddedScript {
  readonly sha1: string;
  /** The .lua file's text, includes expanded: what the envelope runs. */
  readonly body: string;
}

/**
 * The call-nonce envelope: given one ARGV more than its header names (the adapter's per-call nonce,
 * see evalScript), the script removes it before its body runs and replies `{nonce, reply}`, so the
 * caller can tell its own reply from another command's a client paired with it (node-redis 5 after
 * a reset, docs/guarantees.md). An error reply is returned as is (it is no grant to mistake for
 * another's). Called without it (tests, the benchmark's raw rows), the script replies as its body.
 */
function withCallNonce(body: string, argCount: number): string {
  return (
    `local locksmith_nonce = nil\nif #ARGV > ${argCount} then locksmith_nonce = table.remove(ARGV) end\n` +
    `local locksmith_reply = (function()\n${body}\nend)()\n` +
    "if locksmith_nonce == nil or (type(locksmith_reply) == 'table' and locksmith_reply.err) then\n" +
    '  return locksmith_reply\nend\nreturn {locksmith_nonce, locksmith_reply}\n'
  );
}

export function defineScript(embedded: EmbeddedScript): Script {
  const source = withCallNonce(embedded.source, embedded.argCount);
  const sha1 = createHash('sha1').update(source).digest('hex');
  return Object.freeze({ ...embedded, body: embedded.source, source, sha1 });
}
