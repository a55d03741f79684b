/**
 * What a Redis server says it spent, read between two points of a run: its own CPU time
 * (`INFO cpu`) and the commands it ran by name (`INFO commandstats`, reset by CONFIG RESETSTAT).
 */
import type { Redis } from 'ioredis';

/** Redis' own CPU time so far (user + system), µs. */
export async function redisCpuUs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (field('used_cpu_sys') + field('used_cpu_user')) * 1e6;
}

/**
 * Redis commands since the last CONFIG RESETSTAT, by name (INFO commandstats: a script's own
 * redis.call()s count as commands, as do EVALSHA itself, PUBLISH, SUBSCRIBE, ...).
 */
export async function commandCalls(admin: Redis): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) {
    if (/^(info|config)\b/.test(match[1] as string)) continue;
    calls[match[1] as string] = Number(match[2]);
  }
  return calls;
}
