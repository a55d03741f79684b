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

/** A Lua script with its SHA1, as Redis' script cache knows it. */
export interface Script extends EmbeddedScript {
  readonly sha1: string;
}

export function defineScript(embedded: EmbeddedScript): Script {
  const sha1 = createHash('sha1').update(embedded.source).digest('hex');
  return Object.freeze({ ...embedded, sha1 });
}
