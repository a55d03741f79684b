import { defineScript } from './script.js';
import {
  fairAcquireLua,
  fairInspectLua,
  fairReleaseLua,
  fencedWriteLua,
  mutexAcquireLua,
  mutexExtendLua,
  mutexInspectLua,
  mutexReleaseLua,
  serverCheckLua,
} from './scripts.generated.js';

/** Every script Locksmith runs. Key counts must match the KEYS named in each script's header. */
export const scripts = Object.freeze({
  mutexAcquire: defineScript('mutex-acquire', mutexAcquireLua, 3),
  mutexRelease: defineScript('mutex-release', mutexReleaseLua, 3),
  mutexExtend: defineScript('mutex-extend', mutexExtendLua, 1),
  mutexInspect: defineScript('mutex-inspect', mutexInspectLua, 2),
  fencedWrite: defineScript('fenced-write', fencedWriteLua, 2),
  fairAcquire: defineScript('fair-acquire', fairAcquireLua, 4),
  fairRelease: defineScript('fair-release', fairReleaseLua, 5),
  fairInspect: defineScript('fair-inspect', fairInspectLua, 3),
  serverCheck: defineScript('server-check', serverCheckLua, 1),
});
