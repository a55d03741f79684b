import { randomBytes } from 'node:crypto';

/** A 128-bit random owner token, hex encoded: unguessable and unique per acquisition. */
export function newToken(): string {
  return randomBytes(16).toString('hex');
}
