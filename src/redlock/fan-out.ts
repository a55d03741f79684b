import type { NodeOutcome } from '../errors.js';

/** One node's reply to a fan-out, as far as it is known when the fan-out settles. */
export type NodeReply<T> =
  | { readonly node: number; readonly outcome: 'value'; readonly value: T }
  | { readonly node: number; readonly outcome: 'error'; readonly error: unknown }
  | { readonly node: number; readonly outcome: 'timed-out' }
  | { readonly node: number; readonly outcome: 'pending' };

/**
 * Sends one request to each of `nodes` nodes at once and settles as soon as `decided(replies so far)`
 * says the outcome is known, or when every node answered or ran past `timeoutMs` (a node slower than
 * that is `timed-out`). Nodes still unanswered when it settles early are `pending`. Late replies are
 * ignored (a rejected one too: never an unhandled rejection). Never rejects.
 */
export function fanOut<T>(
  nodes: number,
  send: (node: number) => Promise<T>,
  timeoutMs: number,
  decided: (replies: readonly NodeReply<T>[]) => boolean = () => false,
): Promise<NodeReply<T>[]> {
  return new Promise((resolve) => {
    const replies: (NodeReply<T> | undefined)[] = new Array(nodes).fill(undefined);
    let answered = 0;
    let done = false;
    const timers: NodeJS.Timeout[] = [];
    const finish = () => {
      done = true;
      for (const timer of timers) clearTimeout(timer);
      resolve(replies.map((reply, node) => reply ?? { node, outcome: 'pending' }));
    };
    const record = (reply: NodeReply<T>) => {
      if (done || replies[reply.node] !== undefined) return;
      replies[reply.node] = reply;
      answered += 1;
      const known = replies.filter((r): r is NodeReply<T> => r !== undefined);
      if (answered === nodes || decided(known)) finish();
    };
    for (let node = 0; node < nodes; node += 1) {
      // The timer defers by one turn of the event loop: after a stall (GC, a busy process), timers run
      // before the replies that came meanwhile are read, and would count answered nodes as silent.
      const timedOut = () => setImmediate(() => record({ node, outcome: 'timed-out' }));
      timers.push(setTimeout(timedOut, timeoutMs));
      let sent: Promise<T>;
      try {
        sent = send(node);
      } catch (error) {
        sent = Promise.reject(error);
      }
      sent.then(
        (value) => record({ node, outcome: 'value', value }),
        (error: unknown) => record({ node, outcome: 'error', error }),
      );
    }
    if (nodes === 0) finish();
  });
}

/**
 * The public per-node outcome of a reply whose value says yes or no (`won`: the request succeeded
 * there; `held`: the node said no).
 */
export function nodeOutcome<T>(reply: NodeReply<T>, yes: (value: T) => boolean): NodeOutcome {
  switch (reply.outcome) {
    case 'value':
      return { node: reply.node, outcome: yes(reply.value) ? 'won' : 'held' };
    case 'error':
      return { node: reply.node, outcome: 'error', error: reply.error };
    default:
      return { node: reply.node, outcome: reply.outcome };
  }
}
