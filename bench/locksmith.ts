/**
 * Locksmith as users run it: the built package (`dist/`, which `npm run bench` builds first through
 * its `prebench` script), not the TypeScript sources through tsx. tsx keeps function names by
 * wrapping every function and closure it creates (`__name`), which cost Locksmith about a fifth of
 * its client CPU per acquisition in the benchmark while the peers ran as plain JavaScript. Without
 * a build (a direct `node --import tsx bench/run.ts`), the sources are used, and the header says so.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type * as Sources from '../src/index.js';

const built = new URL('../dist/index.js', import.meta.url);

export const locksmithSource: 'dist' | 'src' = existsSync(fileURLToPath(built)) ? 'dist' : 'src';

export const locksmith: typeof Sources =
  locksmithSource === 'dist' ? await import(built.href) : await import('../src/index.js');
