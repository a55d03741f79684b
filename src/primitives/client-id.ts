import { contextOf } from '../adapters/client-context.js';
import type { RedisDriver } from '../adapters/driver.js';
import { newToken } from '../token.js';

// Wake-ups and hand-offs are announced on one channel per client (per driver) and lock: a process
// hears only its own waiters' messages, and a busy lock costs each process one subscription, not
// one per waiter. PUBLISH's receiver count then also tells whether that process is still there.

/** A random id for this client object, stable for its lifetime. */
export function clientId(driver: RedisDriver): string {
  const context = contextOf(driver);
  context.clientId ??= newToken().slice(0, 16);
  return context.clientId;
}
