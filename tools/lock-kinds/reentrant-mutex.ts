/** What the fault suite knows of the ReentrantMutex: a worker holds it twice, as nested calls do. */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  acquireAs,
  fromLease,
  type HoldContext,
  type LockAdapter,
  perfToMono,
} from '../../test/faults/toolkit/held-lock.js';
import type { Library } from './registry.js';

/**
 * A ReentrantMutex held twice by one owner: the outer acquisition (waiting, or a try), then a
 * re-entry that must not wait (`tryAcquire()`) and must carry the outer's fencing token (when the
 * re-entry fails under a fault, the outer hold alone). The critical
 * section runs under both holds; they are released in a random order (the outer first half the
 * time, so the hold in the lock key's value is handed to the other), and the lock is free for the
 * next worker only after both. The holder counts as holding until the first of its two leases lapses.
 */
export function reentrantHolds(lib: Library, at: HoldContext): LockAdapter {
  const { config } = at;
  const mutex = new lib.ReentrantMutex(at.client, at.name, at.options);
  return {
    acquire: async (signal) => {
      const owner = new lib.LockOwner();
      const outer = await acquireAs(config, mutex, signal, { owner });
      // A re-entry that fails (Redis unreachable, its reply lost) is a nested call that failed: the
      // worker still holds the lock by the outer lease, and works and releases with it alone.
      const inner = (await mutex.tryAcquire({ signal, owner }).catch(() => null)) ?? undefined;
      // The re-entry is a round trip more: the outer lease may have lapsed meanwhile (an extension
      // held up by the proxy). A holder is handed over only with validity left, as the lock does.
      if (!outer.isHeld || (inner && !inner.isHeld)) {
        const releases = Promise.allSettled([inner?.release(), outer.release()]);
        await Promise.race([releases, sleep(config.ttlMs)]);
        throw new Error('LockLostError: the outer hold lapsed while the re-entry was in flight');
      }
      if (!inner) return fromLease(outer, mutex.keys.lock);
      if (inner.fencingToken !== outer.fencingToken) {
        // Redis forgot the outer hold (a restart without persistence): the "re-entry" took a free
        // lock afresh. Not a re-entry, so not handed over; any other cause shows as a failure here.
        await Promise.race([Promise.allSettled([inner.release(), outer.release()]), sleep(config.ttlMs)]);
        throw new Error(`re-entry changed the fencing token: ${outer.fencingToken} → ${inner.fencingToken}`);
      }
      const [first, second] = Math.random() < 0.5 ? [inner, outer] : [outer, inner];
      return {
        ...fromLease(outer, mutex.keys.lock),
        validUntil: () => Math.min(outer.validUntil, inner.validUntil) + perfToMono,
        signal: AbortSignal.any([outer.signal, inner.signal]),
        extend: async (ttlMs) => {
          await Promise.all([outer.extend(ttlMs), inner.extend(ttlMs)]);
        },
        // Both are released whatever the first one's outcome (a rejected release must not leave the
        // other hold, and its watchdog, behind); the first error, if any, is the release's.
        release: async () => {
          const [a, b] = await Promise.allSettled([first.release(), second.release()]);
          if (a.status === 'rejected') throw a.reason;
          if (b.status === 'rejected') throw b.reason;
          return a.value && b.value;
        },
      };
    },
  };
}
