/**
 * An in-process TCP proxy between Redis clients and one redis-server, for fault injection.
 *
 * It understands RESP framing (see resp.ts) so it always acts on whole commands and replies:
 * - delay: latency added to every request and every reply, order preserved per direction;
 * - drop: a chosen command never reaches the server, and the connection is reset;
 * - swallow-reply: a chosen command reaches the server and applies, but its reply is never
 *   delivered: the connection is reset instead (the "did it happen?" case clients must survive);
 * - black-hole: bytes in both directions vanish while connections stay open, as in a partition;
 *   `heal()` ends it by resetting those connections (their streams lost bytes, so they are
 *   unusable; in production a TCP keepalive or a client timeout would end them);
 * - reset: every connection is torn down with a TCP RST.
 * Pub/sub connections are recognised (SUBSCRIBE) and exempt from per-command rules: their replies
 * are pushes that do not pair with requests.
 */
import { createServer, type Server, Socket } from 'node:net';
import { scripts } from '../../../src/protocol/scripts.js';
import { mono } from './protocol.js';
import { parseRequest, replyEnd } from './resp.js';

export type CommandAction = 'forward' | 'drop' | 'swallow-reply';

export interface ProxiedCommand {
  /** Upper-case command name (EVALSHA, GET, ...). */
  readonly name: string;
  /** For EVAL/EVALSHA of a Locksmith script: its name (`mutex-acquire`, ...). */
  readonly script: string | undefined;
  /** Which proxied connection carries it. */
  readonly connection: number;
  /** The label of the entrance the connection came in by (`FaultProxy.entrance`), if any. */
  readonly client: string | undefined;
}

/** Decides, per command, what the proxy does with it. */
export type CommandRule = (command: ProxiedCommand) => CommandAction;

const scriptNames = new Map<string, string>();
for (const script of Object.values(scripts)) {
  for (const text of [script, script.checked]) {
    scriptNames.set(text.sha1, script.name);
    scriptNames.set(text.source, script.name);
  }
}

/** The Locksmith script a command runs, if any (by SHA for EVALSHA, by source for EVAL). */
export function scriptOf(args: readonly string[]): string | undefined {
  const name = args[0]?.toUpperCase();
  if (name === 'EVALSHA' || name === 'EVALSHA_RO' || name === 'EVAL' || name === 'EVAL_RO') {
    return scriptNames.get(args[1] ?? '');
  }
  return undefined;
}

/**
 * One script call (EVAL*) a proxy saw, with what became of it (`FaultProxy.trace`): the order in
 * which a node was asked, as the node saw it.
 */
export interface TracedCommand {
  /** When it reached the proxy from the client (mono ms). */
  readonly t: number;
  readonly connection: number;
  /**
   * The label of the entrance its connection came in by (`FaultProxy.entrance`: the fault suite
   * gives each worker its own, named after the worker and its client kind), if any.
   */
  readonly client: string | undefined;
  readonly name: string;
  readonly script: string | undefined;
  /** Its key count, keys and arguments (not an EVAL's source). */
  readonly args: readonly string[];
  /**
   * What became of it: the reply's first line; 'dropped' (never reached the server); 'swallowed: '
   * and the reply (applied, the reply lost); undefined while no reply came (the link closed first).
   */
  outcome?: string;
  /** When its reply (or its fate) reached the proxy (mono ms). */
  at?: number;
}

/** A TCP server listening on a free port of 127.0.0.1, and that port. */
async function listenOnFreePort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('proxy: no address');
  return { server, port: address.port };
}

interface Pending {
  readonly command: ProxiedCommand;
  readonly swallow: boolean;
  readonly traced: TracedCommand | undefined;
}

/** A reply's first line, for a trace (`*3` with its first element, `-NOSCRIPT ...`). */
function replySummary(frame: Buffer): string {
  return frame.toString('latin1', 0, Math.min(frame.length, 60)).replace(/\r\n/g, ' ').trim();
}

interface Link {
  readonly id: number;
  /** The label of the entrance it came in by (`FaultProxy.entrance`), if any. */
  readonly label: string | undefined;
  readonly client: Socket;
  server: Socket | undefined;
  clientBuf: Buffer;
  serverBuf: Buffer;
  readonly pending: Pending[];
  pubsub: boolean;
  blackholed: boolean;
  /** A drop or a swallowed reply condemned it: nothing more passes, the reset is on its way. */
  doomed: boolean;
  closed: boolean;
  /** When the last delayed delivery in each direction is due: keeps order under random delays. */
  toServerAt: number;
  toClientAt: number;
  /** Deliveries not yet made, oldest first, one queue per direction (see `deliver`). */
  readonly queues: Record<'toServer' | 'toClient', Delivery[]>;
}

interface Delivery {
  readonly at: number;
  readonly action: () => void;
}

export interface ProxyStats {
  connections: number;
  resets: number;
  dropped: number;
  swallowed: number;
  blackholedBytes: number;
}

export class FaultProxy {
  /**
   * Latency added to each request and each reply, in ms. A function is drawn per frame and told
   * which way it goes and whether its connection is a pub/sub one (to delay only messages, say).
   */
  delay: number | ((frame: { readonly toClient: boolean; readonly pubsub: boolean }) => number) = 0;
  /** Per-command decision; undefined forwards everything. */
  rule: CommandRule | undefined;
  /** When set, every script call (EVAL*) is appended to it with its outcome (see `TracedCommand`). */
  trace: TracedCommand[] | undefined;
  readonly stats: ProxyStats = { connections: 0, resets: 0, dropped: 0, swallowed: 0, blackholedBytes: 0 };

  private readonly links = new Set<Link>();
  /** The listeners `entrance` opened, closed with the proxy. */
  private readonly entrances: Server[] = [];
  private blackholing = false;
  private nextId = 1;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host?: string; port: number }): Promise<FaultProxy> {
    const { server, port } = await listenOnFreePort();
    const proxy = new FaultProxy(server, port, {
      host: target.host ?? '127.0.0.1',
      port: target.port,
    });
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * Another way in, on a port of its own, to the same proxy (the same rules, delays and trace): the
   * connections that come in by it carry `label` in the trace. The fault suite gives each worker
   * one, so a traced call names the worker and its client kind, whichever client library it uses
   * (a label the client itself sent, as CLIENT SETNAME, would depend on each library). Resolves
   * with its URL.
   */
  async entrance(label: string): Promise<string> {
    const { server, port } = await listenOnFreePort();
    server.on('connection', (socket) => this.accept(socket, label));
    this.entrances.push(server);
    return `redis://127.0.0.1:${port}`;
  }

  /** From now on bytes vanish both ways on every connection, existing and new. */
  blackhole(): void {
    this.blackholing = true;
    for (const link of this.links) link.blackholed = true;
  }

  /** Ends a black-hole: the connections it swallowed bytes of are reset; new ones work again. */
  heal(): void {
    this.blackholing = false;
    for (const link of [...this.links]) if (link.blackholed) this.reset(link);
  }

  get isBlackholing(): boolean {
    return this.blackholing;
  }

  /** Resets every connection (TCP RST to the client and the server); resolves with how many. */
  resetAll(): number {
    const links = [...this.links];
    for (const link of links) this.reset(link);
    return links.length;
  }

  async close(): Promise<void> {
    this.resetAll();
    await Promise.all(
      [this.server, ...this.entrances].map(
        (server) => new Promise<void>((resolve) => server.close(() => resolve())),
      ),
    );
  }

  private accept(client: Socket, label?: string): void {
    this.stats.connections += 1;
    client.setNoDelay(true);
    const link: Link = {
      id: this.nextId++,
      label,
      client,
      server: undefined,
      clientBuf: Buffer.alloc(0),
      serverBuf: Buffer.alloc(0),
      pending: [],
      pubsub: false,
      blackholed: this.blackholing,
      doomed: false,
      closed: false,
      toServerAt: 0,
      toClientAt: 0,
      queues: { toServer: [], toClient: [] },
    };
    this.links.add(link);
    client.on('error', () => this.close1(link));
    client.on('close', () => this.close1(link));
    client.on('data', (chunk: Buffer) => this.fromClient(link, chunk));
    // A black-holed connection never reaches the server, like a SYN lost in a partition.
    if (!link.blackholed) this.connectServer(link);
  }

  private connectServer(link: Link): void {
    const server = new Socket();
    link.server = server;
    server.setNoDelay(true);
    server.on('error', () => this.reset(link));
    server.on('close', () => this.reset(link));
    server.on('data', (chunk: Buffer) => this.fromServer(link, chunk));
    server.connect(this.target.port, this.target.host);
  }

  private fromClient(link: Link, chunk: Buffer): void {
    if (link.closed || link.doomed) return;
    if (link.blackholed) {
      this.stats.blackholedBytes += chunk.length;
      return;
    }
    link.clientBuf = link.clientBuf.length ? Buffer.concat([link.clientBuf, chunk]) : chunk;
    let at = 0;
    for (;;) {
      const request = parseRequest(link.clientBuf, at);
      if (!request) break;
      const frame = link.clientBuf.subarray(at, request.end);
      at = request.end;
      const name = (request.args[0] ?? '').toUpperCase();
      if (name === 'SUBSCRIBE' || name === 'PSUBSCRIBE' || name === 'SSUBSCRIBE') {
        // Replies on this connection are pushes from now on: stop pairing them with requests.
        link.pubsub = true;
        link.pending.length = 0;
      }
      const command: ProxiedCommand = {
        name,
        script: scriptOf(request.args),
        connection: link.id,
        client: link.label,
      };
      const action = link.pubsub || !this.rule ? 'forward' : this.rule(command);
      const traced =
        this.trace && name.startsWith('EVAL')
          ? {
              t: mono(),
              connection: link.id,
              client: link.label,
              name,
              script: command.script,
              args: request.args.slice(2),
            }
          : undefined;
      if (traced) this.trace?.push(traced);
      if (action === 'drop') {
        if (traced) Object.assign(traced, { outcome: 'dropped', at: mono() });
        this.stats.dropped += 1;
        // Everything before it is delivered first; then the connection dies.
        link.doomed = true;
        this.deliver(link, 'toServer', () => this.reset(link));
        link.clientBuf = Buffer.alloc(0);
        return;
      }
      if (!link.pubsub) link.pending.push({ command, swallow: action === 'swallow-reply', traced });
      const copy = Buffer.from(frame);
      this.deliver(link, 'toServer', () => link.server?.write(copy));
    }
    link.clientBuf = at === link.clientBuf.length ? Buffer.alloc(0) : link.clientBuf.subarray(at);
  }

  private fromServer(link: Link, chunk: Buffer): void {
    if (link.closed || link.doomed) return;
    if (link.blackholed) {
      this.stats.blackholedBytes += chunk.length;
      return;
    }
    if (link.pubsub) {
      this.deliver(link, 'toClient', () => link.client.write(chunk));
      return;
    }
    link.serverBuf = link.serverBuf.length ? Buffer.concat([link.serverBuf, chunk]) : chunk;
    let at = 0;
    for (;;) {
      const end = replyEnd(link.serverBuf, at);
      if (end < 0) break;
      const frame = Buffer.from(link.serverBuf.subarray(at, end));
      at = end;
      const pending = link.pending.shift();
      if (pending?.traced) {
        pending.traced.outcome = `${pending.swallow ? 'swallowed: ' : ''}${replySummary(frame)}`;
        pending.traced.at = mono();
      }
      if (pending?.swallow) {
        // The command applied on the server; its reply is lost with the connection.
        this.stats.swallowed += 1;
        link.doomed = true;
        this.deliver(link, 'toClient', () => this.reset(link));
        link.serverBuf = Buffer.alloc(0);
        return;
      }
      this.deliver(link, 'toClient', () => link.client.write(frame));
    }
    link.serverBuf = at === link.serverBuf.length ? Buffer.alloc(0) : link.serverBuf.subarray(at);
  }

  /**
   * Runs `action` after the configured delay, never before an earlier delivery the same way: TCP
   * never reorders a byte stream, and a proxy that did would make the client pair replies with the
   * wrong commands. One timer per direction drains a FIFO queue; a timer per delivery is not
   * enough, because Node schedules timers from its cached integer loop time, so two deliveries
   * due a fraction of a millisecond apart could fire in the wrong order (seen in the abort storm).
   */
  private deliver(link: Link, direction: 'toServer' | 'toClient', action: () => void): void {
    const delay =
      typeof this.delay === 'function'
        ? this.delay({ toClient: direction === 'toClient', pubsub: link.pubsub })
        : this.delay;
    const now = performance.now();
    const key = direction === 'toServer' ? 'toServerAt' : 'toClientAt';
    const queue = link.queues[direction];
    if (delay <= 0 && queue.length === 0) {
      action();
      return;
    }
    const at = Math.max(now + Math.max(0, delay), link[key]);
    link[key] = at;
    queue.push({ at, action });
    if (queue.length === 1) this.drainLater(link, queue);
  }

  private drainLater(link: Link, queue: Delivery[]): void {
    const head = queue[0];
    if (!head) return;
    setTimeout(
      () => {
        if (link.closed) return;
        const now = performance.now();
        while (queue.length > 0 && (queue[0] as Delivery).at <= now + 0.5)
          (queue.shift() as Delivery).action();
        this.drainLater(link, queue);
      },
      Math.max(0, head.at - performance.now()),
    );
  }

  private reset(link: Link): void {
    if (link.closed) return;
    this.stats.resets += 1;
    this.close1(link);
  }

  private close1(link: Link): void {
    if (link.closed) return;
    link.closed = true;
    this.links.delete(link);
    for (const socket of [link.client, link.server]) {
      if (!socket || socket.destroyed) continue;
      // An RST, not a FIN: the peer learns at once that the connection is gone.
      if (socket.readyState === 'open') socket.resetAndDestroy();
      else socket.destroy();
    }
  }
}
