import { clientKinds } from '../fixtures/clients.js';
import { mutexSuite } from '../suites/mutex-suite.js';

for (const kind of clientKinds) mutexSuite(kind);
