/**
 * Finds the Redis the demo runs on: REDIS_URL when set, else a redis-server of its own on a free
 * loopback port. When neither works it says how to fix that, instead of failing with a stack trace.
 */
import { Redis } from 'ioredis';
import { type RedisServer, requireRedisServer, startRedis } from '../tools/redis-server.js';

export interface DemoRedis {
  readonly url: string;
  /** What the demo says about the server it uses. */
  readonly description: string;
  /** Stops the server the demo started (nothing for REDIS_URL). */
  stop(): Promise<void>;
}

/** A problem the user can fix; its message is printed as is, without a stack trace. */
export class DemoSetupError extends Error {
  override readonly name = 'DemoSetupError';
}

const HOW_TO_GET_REDIS = [
  'Either install Redis (the demo then starts and stops a redis-server of its own on a free port):',
  '  sudo apt-get install redis-server   # Debian, Ubuntu',
  '  brew install redis                  # macOS',
  'or point the demo at a Redis server you run (it only uses keys demo:* and locksmith:{demo-*}):',
  '  REDIS_URL=redis://127.0.0.1:6379 npm start',
].join('\n');

const CONNECT_TIMEOUT_MS = 3_000;

export async function redisForDemo(env: NodeJS.ProcessEnv = process.env): Promise<DemoRedis> {
  const url = env.REDIS_URL;
  if (url) {
    await checkReachable(url);
    return { url, description: `Using REDIS_URL=${url}`, stop: async () => {} };
  }
  try {
    requireRedisServer();
  } catch {
    throw new DemoSetupError(
      `The demo needs Redis: redis-server is not on PATH and REDIS_URL is not set.\n${HOW_TO_GET_REDIS}`,
    );
  }
  const server: RedisServer = await startRedis();
  return {
    url: server.url,
    description: `Started redis-server (pid ${server.pid}) on ${server.url}; set REDIS_URL to use your own.`,
    stop: () => server.stop(),
  };
}

/** One PING without retries, so a wrong REDIS_URL is reported in seconds, not retried for ever. */
async function checkReachable(url: string): Promise<void> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    throw new DemoSetupError(
      `The demo could not reach REDIS_URL=${url} (${(error as Error).message}).\n${HOW_TO_GET_REDIS}`,
    );
  } finally {
    probe.disconnect();
  }
}
