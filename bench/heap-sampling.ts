/**
 * Bytes a pass of the benchmark allocates, from V8's sampling heap profiler with collected objects
 * included (a short-lived object counts as much as one kept): in all, and by allocating function.
 * The profiler slows what it watches, so the timed pass runs without it.
 */
import { Session } from 'node:inspector/promises';

export interface Allocations {
  readonly bytes: number;
  /** Bytes by allocating function: "name file:line", the file shortened to its last two segments. */
  readonly bySite: ReadonlyMap<string, number>;
}

/** Runs `pass` under the sampling heap profiler (one sample every `samplingInterval` bytes). */
export async function sampleAllocations(
  pass: () => Promise<void>,
  samplingInterval = 256,
): Promise<Allocations> {
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.startSampling', {
      samplingInterval,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    await pass();
    const { profile } = await session.post('HeapProfiler.getSamplingProfile');
    await session.post('HeapProfiler.stopSampling');
    let bytes = 0;
    const bySite = new Map<string, number>();
    const walk = (node: typeof profile.head) => {
      bytes += node.selfSize;
      const { functionName, url, lineNumber } = node.callFrame;
      const site = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      for (const child of node.children) walk(child);
    };
    walk(profile.head);
    return { bytes, bySite };
  } finally {
    session.disconnect();
  }
}
