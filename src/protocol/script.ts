import { createHash } from 'node:crypto';

/** A Lua script with its SHA1, as Redis' script cache knows it. */
export interface Script {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
  /** How many of the arguments are KEYS (the rest are ARGV). */
  readonly keyCount: number;
}

export function defineScript(name: string, source: string, keyCount: number): Script {
  const sha1 = createHash('sha1').update(source).digest('hex');
  return Object.freeze({ name, source, sha1, keyCount });
}
