/**
 * What the harnesses know of the Semaphore beyond its constructor: how a fault-suite worker holds
 * permits of it, and how that holder is found among the lock's holders.
 */
import {
  acquireAs,
  fromLease,
  type HoldContext,
  type LockAdapter,
} from '../../test/faults/toolkit/held-lock.js';
import type { Library } from './registry.js';

/** Permits of the fault suite's Semaphore: with 4 workers taking 1 or 2 each, there is contention. */
export const FAULT_SEMAPHORE_LIMIT = 2;

/** The probe of a Semaphore holder: its own entry among the live holders, by the server's clock. */
export const SEMAPHORE_PROBE = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local members = redis.pcall('zrangebyscore', KEYS[1], '(' .. now, '+inf', 'withscores')
if type(members) ~= 'table' or members.err then return {'', -2} end
for i = 1, #members, 2 do
  -- "<permits>|<fence>|<#label>|<label><token>" (semaphore-holders.lua)
  local label_len, rest = string.match(members[i], '^%d+|%d+|(%d+)|(.*)$')
  if rest and string.sub(rest, tonumber(label_len) + 1) == ARGV[1] then
    return {ARGV[1], tonumber(members[i + 1]) - now}
  end
end
if #members > 0 then return {'another holder', -2} end
return {'', -2}`;

/**
 * A Semaphore of `at.limit` permits, each acquisition taking 1 or 2 of them; the checker counts the
 * permits held by valid holders against the kind's limit. A worker of several loops (concurrent
 * callers of one process) takes 2 only now and then: calls for one permit pass the process's
 * permits among its loops (its local batch), and calls for two, which go to Redis alone, hold beside them.
 */
export function semaphoreHolds(lib: Library, at: HoldContext): LockAdapter {
  const semaphore = new lib.Semaphore(at.client, at.name, { ...at.options, limit: at.limit });
  const twoPermits = (at.config.loops ?? 1) > 1 ? 0.2 : 0.5;
  return {
    acquire: async (signal) => {
      const permits = Math.random() < twoPermits ? 2 : 1;
      const lease = await acquireAs(at.config, semaphore, signal, { permits }, 'too few permits free');
      return { ...fromLease(lease, semaphore.keys.lock), permits, probeScript: SEMAPHORE_PROBE };
    },
  };
}
