import { describe } from 'node:test';
import { clientKinds } from '../fixtures/clients.js';
import { SUITES_AT_ONCE } from '../fixtures/helpers.js';
import { mutexOnlySuite } from '../suites/mutex-only.js';

// A redis-server per client kind: the blocks run side by side.
describe('Mutex only', { concurrency: SUITES_AT_ONCE }, () => {
  for (const kind of clientKinds) mutexOnlySuite(kind);
});
