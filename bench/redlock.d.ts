// redlock@5.0.0-beta.2 ships its types at dist/index.d.ts but its `exports` map does not point at
// them, so TypeScript's NodeNext resolution cannot find them; the benchmark uses this much of it.
declare module 'redlock' {
  import type { Redis } from 'ioredis';
  export interface RedlockSettings {
    retryCount?: number;
    retryDelay?: number;
    retryJitter?: number;
  }
  export default class Redlock {
    constructor(clients: Iterable<Redis>, settings?: RedlockSettings);
    acquire(
      resources: string[],
      duration: number,
    ): Promise<{ attempts: unknown[]; release(): Promise<unknown> }>;
  }
}
