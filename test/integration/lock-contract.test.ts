import { clientKinds } from '../fixtures/clients.js';
import { lockContract } from '../suites/lock-contract.js';
import { lockKinds } from '../suites/lock-kinds.js';

for (const lockKind of lockKinds) {
  for (const kind of clientKinds) lockContract(lockKind, kind);
}
