/**
 * Lock metrics in OpenTelemetry: Locksmith publishes what its locks do on the `locksmith`
 * diagnostics channel (acquired with its wait, released with its hold time, contended, timed-out,
 * lock-lost); this maps each event to an instrument of the OpenTelemetry metrics API. Locksmith does
 * not depend on OpenTelemetry: only this file imports it.
 *
 * In a service, keep `instrumentLocks(metrics.getMeter('locksmith'))` and your own MeterProvider
 * and exporter (OTLP, Prometheus). Here an in-memory exporter shows what would be exported after a
 * small contended workload.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/metrics-opentelemetry.ts
 */
import { type Meter, metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { Redis } from 'ioredis';
import { subscribeLockEvents } from 'redis-locksmith';
import { contendedWorkload } from './metrics-workload.js';

/**
 * Subscribes to Locksmith's events and records them as metrics; returns a function that stops.
 * Attribute `lock` is the lock name: if your names carry ids (`invoice:42`), map them to a family
 * (`invoice`) first, or every id becomes a time series.
 */
export function instrumentLocks(meter: Meter): () => void {
  const acquisitions = meter.createCounter('locksmith.acquisitions', { description: 'Locks acquired' });
  const waits = meter.createHistogram('locksmith.wait.duration', {
    unit: 'ms',
    description: 'Time to acquire',
  });
  const holds = meter.createHistogram('locksmith.hold.duration', { unit: 'ms', description: 'Time held' });
  const contended = meter.createCounter('locksmith.contentions', {
    description: 'Acquires that had to wait',
  });
  const timeouts = meter.createCounter('locksmith.timeouts', { description: 'Acquires that gave up' });
  const lost = meter.createCounter('locksmith.lost', { description: 'Leases lost while held' });
  return subscribeLockEvents((event) => {
    const lock = event.lockName;
    switch (event.type) {
      case 'acquired':
        acquisitions.add(1, { lock, kind: event.kind });
        waits.record(event.waitMs, { lock });
        break;
      case 'released':
        holds.record(event.heldMs, { lock });
        break;
      case 'contended':
        contended.add(1, { lock });
        break;
      case 'timed-out':
        timeouts.add(1, { lock });
        break;
      case 'lock-lost':
        lost.add(1, { lock, reason: event.reason });
        break;
    }
  });
}

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
const provider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(provider);
const stop = instrumentLocks(metrics.getMeter('locksmith'));

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
try {
  await contendedWorkload(redis);

  await reader.forceFlush();
  for (const scope of exporter.getMetrics().at(-1)?.scopeMetrics ?? []) {
    for (const metric of scope.metrics) {
      for (const point of metric.dataPoints) {
        const value = point.value as number | { count: number; sum?: number };
        const shown = typeof value === 'number' ? String(value) : `count ${value.count}`;
        console.log(`${metric.descriptor.name} ${JSON.stringify(point.attributes)} ${shown}`);
      }
    }
  }
} finally {
  stop();
  await provider.shutdown();
  await redis.quit();
}
