import { clientKinds } from '../fixtures/clients.js';
import { mutexOnlySuite } from '../suites/mutex-only.js';

for (const kind of clientKinds) mutexOnlySuite(kind);
