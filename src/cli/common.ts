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
      timeoutMs: values.timeout === undefined ? 5_000 : timeoutOf(values.timeout),
    },
    env,
  );
}

function timeoutOf(value: string): number {
  const ms = parseDuration('timeout', value);
  if (ms < 1) throw usageError(`--timeout must be at least 1 ms, got "${value}"`);
  return ms;
}

/**
 * \`argv\` with a value that starts with a dash joined to its option (\`--ttl -5\` → \`--ttl=-5\`,
 * \`-w -1\` → \`-w-1\`), so that parseArgs takes it as the value and the option's own check says what is
 * wrong with it, rather than parseArgs' "argument is ambiguous".
 */
export function withNegativeValues(
  argv: readonly string[],
  options: Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string }>,
): string[] {
  const takesValue = new Set<string>();
  for (const [long, option] of Object.entries(options)) {
    if (option.type !== 'string') continue;
    takesValue.add(`--${long}`);
    if (option.short) takesValue.add(`-${option.short}`);
  }
  const args: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    if (takesValue.has(arg) && next !== undefined && /^-\d/.test(next)) {
      args.push(arg.startsWith('--') ? `${arg}=${next}` : `${arg}${next}`);
      i += 1;
    } else args.push(arg);
  }
  return args;
}

const MAX_NAME_LENGTH = 1024;

/** The library's rules for a lock name, said in the command's words before anything is sent. */
export function checkLockName(name: string): string {
  if (name === '') throw usageError('a lock name cannot be empty');
  if (name.length > MAX_NAME_LENGTH)
    throw usageError(`a lock name has at most ${MAX_NAME_LENGTH} characters, got ${name.length}`);
  if (name.startsWith('}'))
    throw usageError(
      `a lock name cannot start with "}", got "${name}" (its keys would land in different Redis Cluster slots)`,
    );
  return name;
}

/** The one positional a command needs (a lock name), or a usage error. */
export function lockNameArg(positionals: readonly string[], command: string): string {
  const [name, ...extra] = positionals;
  if (name === undefined || name === '')
    throw usageError(`${command} needs a lock name (see locksmith ${command} --help)`);
  if (extra.length > 0) throw usageError(`${command} takes one lock name, got also "${extra.join(' ')}"`);
  return checkLockName(name);
}
