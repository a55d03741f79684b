import { describe } from 'node:test';
import * as sources from '../../src/index.js';
import { lockKinds } from '../../tools/lock-kinds/registry.js';
import { clientKinds } from '../fixtures/clients.js';
import { SUITES_AT_ONCE } from '../fixtures/helpers.js';
import { lockContract } from '../suites/lock-contract.js';

// Each pair has a redis-server of its own, and most of a block's time is waiting (TTLs, timeouts,
// quiet periods): the blocks run side by side.
describe('the lock contract', { concurrency: SUITES_AT_ONCE }, () => {
  for (const lockKind of lockKinds(sources)) {
    for (const kind of clientKinds) lockContract(lockKind, kind);
  }
});
