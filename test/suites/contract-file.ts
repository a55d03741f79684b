/**
 * The lock contract of one kind, on every client: the body of each `test/integration/contract/<kind>.test.ts`.
 * One file per kind lets the test runner run kinds side by side (the whole contract in one file was
 * the longest file of `npm test`), and `node --test test/integration/contract/<kind>.test.ts` is the
 * inner loop for a kind. `test/unit/contract-files.test.ts` checks that every kind has its file.
 */
import * as sources from '../../src/index.js';
import { lockKinds } from '../../tools/lock-kinds/registry.js';
import { clientKinds } from '../fixtures/clients.js';
import { lockContract } from './lock-contract.js';

/** The file of a kind: `ReadWriteLock.readLock` → `read-write-lock-read-lock.test.ts`. */
export function contractFileOf(kindName: string): string {
  return `${kindName
    .replace(/\./g, '-')
    .replace(/([a-z])([A-Z])/g, '$1-$2')
    .toLowerCase()}.test.ts`;
}

/** Runs the contract of the registry's kind `kindName` on every client. */
export function contractOnEveryClient(kindName: string): void {
  const lockKind = lockKinds(sources).find((kind) => kind.name === kindName);
  if (!lockKind)
    throw new Error(`no lock kind named ${JSON.stringify(kindName)} in tools/lock-kinds/registry.ts`);
  for (const kind of clientKinds) lockContract(lockKind, kind);
}
