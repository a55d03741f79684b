import { UnexpectedReplyError } from '../errors.js';

/**
 * Decoding of script replies. Both clients give integers as numbers and bulk strings as strings
 * (RESP2 and RESP3 alike for these shapes); anything else means a script and its caller disagree,
 * which is a bug worth a loud error rather than a silent misread.
 */

function malformed(script: string, reply: unknown): Error {
  return new UnexpectedReplyError(script, reply);
}

export function asInteger(script: string, reply: unknown): number {
  if (typeof reply === 'number' && Number.isInteger(reply)) return reply;
  if (typeof reply === 'string' && /^-?\d+$/.test(reply)) return Number(reply);
  if (typeof reply === 'bigint') return Number(reply);
  throw malformed(script, reply);
}

export function asArray(script: string, reply: unknown, length: number): unknown[] {
  if (!Array.isArray(reply) || reply.length !== length) throw malformed(script, reply);
  return reply;
}

export function asString(script: string, reply: unknown): string {
  if (typeof reply === 'string') return reply;
  if (reply instanceof Uint8Array) return Buffer.from(reply).toString('utf8');
  throw malformed(script, reply);
}

/** `{1, value}` → `{ ok: true, value }`; `{0, value}` → `{ ok: false, value }`. */
export function asFlagged(script: string, reply: unknown): { ok: boolean; value: number } {
  const [flag, value] = asArray(script, reply, 2);
  return { ok: asInteger(script, flag) === 1, value: asInteger(script, value) };
}
