/**
 * The connection of one `locksmith` command: the client library the application would use
 * (ioredis, iovalkey or node-redis, whichever is installed; LOCKSMITH_CLIENT picks one), the URL
 * from `--redis` or REDIS_URL (password and ACL user in it, `rediss://` for TLS), a CA file for TLS.
 * A first connection that fails is reported at once, in one line; once connected, the client
 * reconnects as the libraries do (a `run` outlives short outages).
 */
import { readFileSync } from 'node:fs';
import type { RedisClient } from 'redis-locksmith';
import { CliError, EXIT, oneLine, usageError } from './output.js';

export interface ConnectionOptions {
  /** `--redis`, else REDIS_URL, else redis://127.0.0.1:6379. */
  readonly url: string;
  /** `--tls-ca`: a PEM file of the CA that signed the server's certificate (implies TLS). */
  readonly tlsCa?: string | undefined;
  /** How long the first connection (and each read command) may take. */
  readonly timeoutMs: number;
}

export interface Connection {
  /** For the lock classes. */
  readonly client: RedisClient;
  /** Which library it is. */
  readonly library: ClientLibrary;
  /** The URL without its password, for messages. */
  readonly where: string;
  /** One raw command (SCAN, TYPE, ...), bounded by `timeoutMs`. */
  command(...args: string[]): Promise<unknown>;
  /** Bounds a call of the library by `timeoutMs` too, so a silent server is an error, not a hang. */
  bounded<T>(call: Promise<T>, what: string): Promise<T>;
  /** Closes the connection without waiting for Redis (it may be the one that stopped answering). */
  close(): void;
}

export const CLIENT_LIBRARIES = ['ioredis', 'iovalkey', 'redis'] as const;
export type ClientLibrary = (typeof CLIENT_LIBRARIES)[number];

/** The URL with its password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}

function checkUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError(
      `not a Redis URL: "${url}" (expected redis://[user:password@]host[:port][/db] or rediss://…)`,
    );
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw usageError(`not a Redis URL: "${redactUrl(url)}" (the scheme must be redis:// or rediss://)`);
  }
  return parsed;
}

/** The installed client library to use: LOCKSMITH_CLIENT, else the first of ioredis, iovalkey, redis. */
async function loadLibrary(env: NodeJS.ProcessEnv): Promise<{ name: ClientLibrary; module: unknown }> {
  const wanted = env.LOCKSMITH_CLIENT;
  if (wanted !== undefined && !CLIENT_LIBRARIES.includes(wanted as ClientLibrary)) {
    throw usageError(`LOCKSMITH_CLIENT must be one of ${CLIENT_LIBRARIES.join(', ')}, got "${wanted}"`);
  }
  const candidates = wanted ? [wanted as ClientLibrary] : CLIENT_LIBRARIES;
  for (const name of candidates) {
    try {
      return { name, module: await import(name) };
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    }
  }
  throw new CliError(
    wanted
      ? `LOCKSMITH_CLIENT=${wanted}, but ${wanted} is not installed`
      : 'no Redis client is installed: npm install ioredis (or redis, or iovalkey) next to redis-locksmith',
    EXIT.error,
  );
}

/** Why the first connection failed, in one line. */
function connectError(where: string, cause: unknown): CliError {
  const reason = oneLine(cause);
  const refusedLogin = /WRONGPASS|NOAUTH|NOPERM|invalid password|Authentication/i.test(reason);
  return new CliError(
    refusedLogin
      ? `Redis at ${where} refused the login: ${reason}`
      : `cannot connect to Redis at ${where}: ${reason}`,
    EXIT.unavailable,
  );
}

/**
 * A TLS client at a plain port sends its greeting and gets no reply (the server waits for the end
 * of a command), or a reply that is not TLS: say that the server may not speak TLS.
 */
function withTlsHint(failure: CliError): CliError {
  if (!/no reply|wrong version number|SSL|TLS|socket hang up|ECONNRESET/i.test(failure.message))
    return failure;
  return new CliError(
    `${failure.message} (rediss:// and --tls-ca mean TLS: if the server at that port does not speak TLS, use redis://)`,
    failure.exitCode,
  );
}

function withTimeout<T>(call: Promise<T>, ms: number, what: string, where: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new CliError(`no reply from Redis at ${where} within ${ms} ms (${what})`, EXIT.unavailable)),
      ms,
    );
  });
  return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
}

interface IORedisLike {
  connect(): Promise<void>;
  call(command: string, ...args: string[]): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
}
type IORedisConstructor = new (url: string, options: Record<string, unknown>) => IORedisLike;

interface NodeRedisLike {
  connect(): Promise<unknown>;
  sendCommand(args: string[]): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  destroy?(): void;
  disconnect?(): Promise<void>;
}

export async function connect(options: ConnectionOptions, env = process.env): Promise<Connection> {
  const url = checkUrl(options.url);
  const where = redactUrl(options.url);
  let ca: Buffer | undefined;
  if (options.tlsCa !== undefined) {
    try {
      ca = readFileSync(options.tlsCa);
    } catch (error) {
      throw usageError(`cannot read --tls-ca ${options.tlsCa}: ${oneLine(error)}`);
    }
  }
  const tls = url.protocol === 'rediss:' || ca !== undefined;
  const { name, module } = await loadLibrary(env);
  const state: LinkState = { connected: false, lastError: undefined, timeoutMs: options.timeoutMs };
  const link = (name === 'redis' ? openNodeRedis : openIORedis)({ module, url: options.url, tls, ca, state });
  try {
    await withTimeout(link.connect(), options.timeoutMs, 'connect', where);
  } catch (error) {
    link.close();
    const failure = error instanceof CliError ? error : connectError(where, state.lastError ?? error);
    throw tls ? withTlsHint(failure) : failure;
  }
  state.connected = true;
  const bounded = <T>(call: Promise<T>, what: string) => withTimeout(call, options.timeoutMs, what, where);
  return {
    client: link.client as RedisClient,
    library: name,
    where,
    command: (...args) => bounded(link.send(args), args[0] ?? ''),
    bounded,
    close: link.close,
  };
}

/** What the two client families share once made: the first connection is handled by `connect`. */
interface Link {
  readonly client: unknown;
  connect(): Promise<unknown>;
  send(args: string[]): Promise<unknown>;
  close(): void;
}

interface LinkState {
  /** Before the first connection a failure is final; after it, the client reconnects. */
  connected: boolean;
  lastError: unknown;
  readonly timeoutMs: number;
}

interface LinkParams {
  readonly module: unknown;
  readonly url: string;
  readonly tls: boolean;
  readonly ca: Buffer | undefined;
  readonly state: LinkState;
}

const retryMs = (attempt: number) => Math.min(50 * 2 ** attempt, 2_000);

function openNodeRedis({ module, url, tls, ca, state }: LinkParams): Link {
  const { createClient } = module as { createClient(options: unknown): NodeRedisLike };
  const client = createClient({
    url: tls ? url.replace(/^redis:/, 'rediss:') : url,
    socket: {
      connectTimeout: state.timeoutMs,
      ...(tls ? { tls: true, ...(ca ? { ca } : {}) } : {}),
      // Before the first connection: give up at once (a wrong host must not be retried for ever).
      reconnectStrategy: (retries: number, cause: Error) => (state.connected ? retryMs(retries) : cause),
    },
  });
  client.on('error', (error) => {
    state.lastError = error;
  });
  return {
    client,
    connect: () => client.connect(),
    send: (args) => client.sendCommand(args),
    close: () => {
      if (client.destroy) client.destroy();
      else void client.disconnect?.().catch(() => {});
    },
  };
}

function openIORedis({ module, url, tls, ca, state }: LinkParams): Link {
  const moduleExports = module as { Redis?: IORedisConstructor; default?: IORedisConstructor };
  const Redis = (moduleExports.Redis ?? moduleExports.default) as IORedisConstructor;
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: state.timeoutMs,
    ...(tls ? { tls: ca ? { ca } : {} } : {}),
    retryStrategy: (attempt: number) => (state.connected ? retryMs(attempt) : null),
  });
  client.on('error', (error) => {
    state.lastError = error;
  });
  return {
    client,
    connect: () => client.connect(),
    send: ([command, ...args]) => client.call(command ?? '', ...args),
    close: () => client.disconnect(),
  };
}
