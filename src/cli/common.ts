/** Options every command takes, and how they become a connection. */
import { type Connection, connect } from './connect.js';
import { DEFAULT_PREFIX } from './keys.js';
import { parseDuration, usageError } from './output.js';

export const connectionOptions = {
  redis: { type: 'string' },
  'tls-ca': { type: 'string' },
  prefix: { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const CONNECTION_HELP = `Connection:
  --redis <url>      redis://[user:password@]host[:port][/db], rediss:// for TLS (default: REDIS_URL,
                     else redis://127.0.0.1:6379)
  --tls-ca <file>    PEM file of the CA that signed the server's certificate (implies TLS)
  --prefix <text>    key prefix the locks were made with (default: locksmith)
  --timeout <ms>     how long connecting and each read may take (default: 5000)
  Client library: ioredis, iovalkey or redis, the first installed; LOCKSMITH_CLIENT picks one.`;

export interface ConnectionValues {
  readonly redis?: string | undefined;
  readonly 'tls-ca'?: string | undefined;
  readonly prefix?: string | undefined;
  readonly timeout?: string | undefined;
}

export function prefixOf(values: ConnectionValues): string {
  const prefix = values.prefix ?? DEFAULT_PREFIX;
  if (prefix === '' || /[{}]/.test(prefix))
    throw usageError(`--prefix must be non-empty and without braces, got "${prefix}"`);
  return prefix;
}

export function connectFrom(values: ConnectionValues, env = process.env): Promise<Connection> {
  return connect(
    {
      url: values.redis ?? env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      tlsCa: values['tls-ca'],
      timeoutMs: values.timeout === undefined ? 5_000 : parseDuration('timeout', values.timeout),
    },
    env,
  );
}

/** The one positional a command needs (a lock name), or a usage error. */
export function lockNameArg(positionals: readonly string[], command: string): string {
  const [name, ...extra] = positionals;
  if (name === undefined || name === '')
    throw usageError(`${command} needs a lock name (see locksmith ${command} --help)`);
  if (extra.length > 0) throw usageError(`${command} takes one lock name, got also "${extra.join(' ')}"`);
  return name;
}
