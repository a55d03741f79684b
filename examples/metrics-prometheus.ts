/**
 * Lock metrics for Prometheus with prom-client: Locksmith's events on the `locksmith` diagnostics
 * channel (acquired with its wait, released with its hold time, contended, timed-out, lock-lost)
 * become counters and histograms in a registry that your /metrics endpoint serves. Locksmith does
 * not depend on prom-client: only this file imports it.
 *
 * Dashboard queries for "which lock is hot" are in docs/operating.md.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/metrics-prometheus.ts
 */
import { Redis } from 'ioredis';
import { Counter, Histogram, Registry } from 'prom-client';
import { subscribeLockEvents } from 'redis-locksmith';
import { contendedWorkload } from './metrics-workload.js';

/**
 * Registers Locksmith's metrics in `registry` and feeds them from its events; returns a function
 * that stops. Label `lock` is the lock name: map names that carry ids (`invoice:42`) to a family
 * first, or every id becomes a time series.
 */
export function instrumentLocks(registry: Registry): () => void {
  const registers = [registry];
  const seconds = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120];
  const acquisitions = new Counter({
    name: 'locksmith_acquisitions_total',
    help: 'Locks acquired',
    labelNames: ['lock', 'kind'],
    registers,
  });
  const waits = new Histogram({
    name: 'locksmith_wait_seconds',
    help: 'Time from acquire() to the lock',
    labelNames: ['lock'],
    buckets: seconds,
    registers,
  });
  const holds = new Histogram({
    name: 'locksmith_hold_seconds',
    help: 'Time a lease was held',
    labelNames: ['lock'],
    buckets: seconds,
    registers,
  });
  const contended = new Counter({
    name: 'locksmith_contended_total',
    help: 'Acquires that found the lock held and waited',
    labelNames: ['lock'],
    registers,
  });
  const timeouts = new Counter({
    name: 'locksmith_timeouts_total',
    help: 'Acquires that gave up after timeoutMs',
    labelNames: ['lock'],
    registers,
  });
  const lost = new Counter({
    name: 'locksmith_lost_total',
    help: 'Leases lost while held',
    labelNames: ['lock', 'reason'],
    registers,
  });
  return subscribeLockEvents((event) => {
    const lock = event.lockName;
    switch (event.type) {
      case 'acquired':
        acquisitions.inc({ lock, kind: event.kind });
        waits.observe({ lock }, event.waitMs / 1_000);
        break;
      case 'released':
        holds.observe({ lock }, event.heldMs / 1_000);
        break;
      case 'contended':
        contended.inc({ lock });
        break;
      case 'timed-out':
        timeouts.inc({ lock });
        break;
      case 'lock-lost':
        lost.inc({ lock, reason: event.reason });
        break;
    }
  });
}

const registry = new Registry();
const stop = instrumentLocks(registry);
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
try {
  await contendedWorkload(redis);

  // What a scrape of /metrics returns.
  const text = await registry.metrics();
  console.log(
    text
      .split('\n')
      .filter((line) => line.startsWith('locksmith_') && !line.includes('_bucket'))
      .join('\n'),
  );
} finally {
  stop();
  await redis.quit();
}
