import { defineScript } from './script.js';
import {
  fencedWriteLua,
  handOffAcquireLua,
  handOffExtendLua,
  handOffInspectLua,
  handOffReleaseLua,
  multiAcquireLua,
  multiExtendLua,
  multiReleaseLua,
  raiseFenceLua,
  redlockAcquireLua,
  redlockReleaseLua,
  reentrantAcquireLua,
  reentrantExtendLua,
  reentrantInspectLua,
  reentrantReleaseLua,
  rwDowngradeLua,
  semaphoreAcquireLua,
  semaphoreExtendLua,
  semaphoreInspectLua,
  semaphoreReleaseLua,
  semaphoreSetLimitLua,
  serverCheckLua,
} from './scripts.generated.js';

/**
 * Every script Locksmith runs, with the key and argument counts read from its header. Lock kinds do
 * not use these directly: the protocol modules (hand-off.ts, semaphore.ts, ...) build typed calls.
 */
export const scripts = Object.freeze({
  fencedWrite: defineScript(fencedWriteLua),
  handOffAcquire: defineScript(handOffAcquireLua),
  handOffRelease: defineScript(handOffReleaseLua),
  handOffExtend: defineScript(handOffExtendLua),
  handOffInspect: defineScript(handOffInspectLua),
  multiAcquire: defineScript(multiAcquireLua),
  multiRelease: defineScript(multiReleaseLua),
  multiExtend: defineScript(multiExtendLua),
  raiseFence: defineScript(raiseFenceLua),
  redlockAcquire: defineScript(redlockAcquireLua),
  redlockRelease: defineScript(redlockReleaseLua),
  reentrantAcquire: defineScript(reentrantAcquireLua),
  reentrantRelease: defineScript(reentrantReleaseLua),
  reentrantExtend: defineScript(reentrantExtendLua),
  reentrantInspect: defineScript(reentrantInspectLua),
  rwDowngrade: defineScript(rwDowngradeLua),
  semaphoreAcquire: defineScript(semaphoreAcquireLua),
  semaphoreRelease: defineScript(semaphoreReleaseLua),
  semaphoreExtend: defineScript(semaphoreExtendLua),
  semaphoreInspect: defineScript(semaphoreInspectLua),
  semaphoreSetLimit: defineScript(semaphoreSetLimitLua),
  serverCheck: defineScript(serverCheckLua),
});
