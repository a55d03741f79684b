/**
 * Part of every compiled test file (`npm test`: test/compile-tests.mjs calls `guardExit()` first). A test file's
 * process must exit by itself once its tests are done; one that something keeps alive (a client
 * not closed, a subscriber left referenced) would hold `npm test` until CI's own limit, with no
 * word of why (seen once, beside a busy loop: a file idle with a Valkey GLIDE socket open). After
 * the file's last test, an unreferenced timer (it keeps nothing alive itself) names what is still
 * open and fails the file.
 */
import { after } from 'node:test';

/** Long enough for every after-hook registered later (servers stopping) and a lingering subscriber. */
const EXIT_WITHIN_MS = 60_000;

/** Registers the check on the file's root: called first by every compiled test file. */
export function guardExit(): void {
  after(checkExit);
}

function checkExit(): void {
  const timer = setTimeout(() => {
    const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
    process.stderr.write(
      `the test process did not exit within ${EXIT_WITHIN_MS / 1000} s of its last test; open handles:\n` +
        handles.map((handle) => `  ${describeHandle(handle)}\n`).join(''),
    );
    process.exit(1);
  }, EXIT_WITHIN_MS);
  timer.unref();
}

function describeHandle(handle: unknown): string {
  const h = handle as {
    constructor?: { name?: string };
    remoteAddress?: string;
    remotePort?: number;
    _pipeName?: string;
    spawnfile?: string;
    pid?: number;
  };
  const kind = h.constructor?.name ?? typeof handle;
  if (h.remotePort !== undefined) return `${kind} to ${h.remoteAddress}:${h.remotePort}`;
  if (h._pipeName) return `${kind} on ${h._pipeName}`;
  if (h.pid !== undefined) return `${kind} ${h.spawnfile ?? ''} pid ${h.pid}`;
  return kind;
}
