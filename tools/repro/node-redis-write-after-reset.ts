/**
 * The smallest reproduction of node-redis 5's replies paired with the wrong commands after a
 * connection reset (docs/guarantees.md): no Locksmith code, one client, plain ECHOs.
 *
 *   node --import tsx tools/repro/node-redis-write-after-reset.ts [rounds]
 *
 * The trigger: a command sent while a reset is already waiting in the client's socket, unread.
 * Here a timer callback resets the connection (a proxy in this process) and sends `ECHO second`.
 * node-redis 5 schedules the write with setImmediate (the socket still looks ready); the poll
 * phase of the same turn of the event loop reads the reset (what waited for a reply fails, the
 * client reconnects); then the check phase runs the write anyway, into the destroyed socket
 * (RedisSocket.write checks only that a socket object exists), and the command joins those waiting
 * for a reply. It never reached Redis. The new connection's first replies, its handshake's CLIENT
 * SETINFO (OK; an error before Redis 7.2), are paired with such commands, and every reply after
 * that with a command sent before its own; with nothing else queued, the handshake waits for ever
 * and the client hangs. node-redis 6 checks `socket.writable` and forgets the socket on error;
 * node-redis 4 writes only while ready.
 *
 * Prints, per client version, in how many rounds a reply went to the wrong command (or none came).
 */

import { startRedis } from '../redis-server.js';
import { startResetProxy } from '../reset-proxy.js';

interface EchoClient {
  on(event: 'error', listener: (error: Error) => void): unknown;
  connect(): Promise<unknown>;
  sendCommand(args: string[]): Promise<unknown>;
}

const rounds = Number(process.argv[2] ?? 20);
const server = await startRedis();

/** `proxy.resetNow()` resets the client's connection (an RST) at once. */
const proxy = await startResetProxy(server.port);
const { url } = proxy;

const versions: [string, () => Promise<EchoClient>][] = [
  ['node-redis 4', async () => (await import('redis4')).createClient({ url }) as unknown as EchoClient],
  ['node-redis 5', async () => (await import('redis5')).createClient({ url }) as unknown as EchoClient],
  ['node-redis 6', async () => (await import('redis')).createClient({ url }) as unknown as EchoClient],
];

const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<string>((resolve) => setTimeout(() => resolve('(no reply)'), ms))]);

try {
  for (const [name, create] of versions) {
    if (process.env.REPRO_ONLY && !name.endsWith(process.env.REPRO_ONLY)) continue;
    let wrong = 0;
    const examples: string[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const client = await create();
      client.on('error', () => {});
      await client.connect();
      // The reset is in the client's socket before the command's write runs: the same turn of
      // the event loop handles the reset (poll phase) and then the write (check phase).
      // In a timer: the timers phase comes before the poll phase that reads the reset.
      const { second } = await new Promise<{ second: Promise<unknown> }>((resolve) =>
        setTimeout(() => {
          proxy.resetNow();
          resolve({ second: client.sendCommand(['ECHO', 'second']) });
        }, 1),
      );
      // Whatever `second` became (sent on the new connection, or failed with the reset: both right),
      // a command sent after the reconnection must get its own reply.
      const secondReply = await within(
        second.catch((e: Error) => `error: ${e.message}`),
        2_000,
      );
      if (process.env.REPRO_VERBOSE) console.log(name, secondReply);
      const thirdReply = await within(
        client.sendCommand(['ECHO', 'third']).catch((e: Error) => `error: ${e.message}`),
        2_000,
      );
      // Failing with the reset is right for a command the reset caught; any other reply is not its own.
      const lost = (reply: unknown) => /^error: .*(ECONNRESET|EPIPE|[Ss]ocket)/.test(String(reply));
      const ok = (secondReply === 'second' || lost(secondReply)) && thirdReply === 'third';
      if (!ok) {
        wrong += 1;
        if (examples.length < 2)
          examples.push(`ECHO second → ${String(secondReply)}, ECHO third → ${String(thirdReply)}`);
      }
      // The client may be hung in its handshake: closed without waiting (v5, v6 destroy(), v4 disconnect()).
      const closable = client as unknown as { destroy?: () => void; disconnect: () => Promise<void> };
      if (name === 'node-redis 4') await closable.disconnect().catch(() => {});
      else closable.destroy?.();
    }
    console.log(`${name}: ${wrong} of ${rounds} rounds paired a reply with the wrong command`);
    for (const example of examples) console.log(`  ${example}`);
  }
} finally {
  await proxy.close();
  await server.stop();
}
