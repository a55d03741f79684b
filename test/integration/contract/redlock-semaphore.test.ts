import { contractOnEveryClient } from '../../suites/contract-file.js';

contractOnEveryClient('RedlockSemaphore');
