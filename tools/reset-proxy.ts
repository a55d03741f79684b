/**
 * A plain TCP proxy in this process in front of a redis-server, whose `resetNow()` resets every
 * proxied connection at once (an RST to the client): the reset a client sees when a connection
 * breaks under commands in flight. For the node-redis 5 reply mix-up's test and its standalone
 * reproduction (test/integration/mismatched-replies.test.ts, tools/repro/); the fault suite's
 * FaultProxy does the same and much more, across processes.
 */
import { createServer, Socket } from 'node:net';

export interface ResetProxy {
  /** `redis://` URL of the proxy. */
  readonly url: string;
  /** Resets every connection proxied so far. */
  resetNow(): void;
  close(): Promise<void>;
}

export async function startResetProxy(serverPort: number): Promise<ResetProxy> {
  let links: Socket[] = [];
  const proxy = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(serverPort, '127.0.0.1');
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => client.write(chunk));
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    links.push(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  return {
    url: `redis://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    resetNow() {
      for (const link of links) link.resetAndDestroy();
      links = [];
    },
    async close() {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      for (const link of links) link.destroy();
    },
  };
}
