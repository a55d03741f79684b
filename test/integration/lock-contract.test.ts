import * as sources from '../../src/index.js';
import { lockKinds } from '../../tools/lock-kinds/registry.js';
import { clientKinds } from '../fixtures/clients.js';
import { lockContract } from '../suites/lock-contract.js';

for (const lockKind of lockKinds(sources)) {
  for (const kind of clientKinds) lockContract(lockKind, kind);
}
