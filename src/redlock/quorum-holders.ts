import type { SemaphoreHolder, SemaphoreState } from '../protocol/semaphore.js';

/** A RedlockSemaphore's state: the quorum's view, and each node's own (undefined: it did not answer). */
export interface RedlockSemaphoreState extends SemaphoreState {
  readonly nodes: readonly (SemaphoreState | undefined)[];
}

/**
 * The quorum's view of a semaphore over several servers, from each node's own state (undefined:
 * that node did not answer; at least a quorum did). A holder counts when a quorum of nodes hold its
 * token, for as long as the quorum-th longest of those holds lives: what its lease's validity is
 * below. Holders on a minority only (an acquisition under way, or one given back) do not count.
 * No I/O: unit-tested with plain states.
 */
export function quorumHolders(
  nodes: readonly (SemaphoreState | undefined)[],
  quorum: number,
): RedlockSemaphoreState {
  const answered = nodes.filter((n): n is SemaphoreState => n !== undefined);
  const byToken = new Map<string, SemaphoreHolder[]>();
  for (const node of answered) {
    for (const holder of node.holders)
      byToken.set(holder.token, [...(byToken.get(holder.token) ?? []), holder]);
  }
  const holders: SemaphoreHolder[] = [];
  for (const held of byToken.values()) {
    if (held.length < quorum) continue;
    const sorted = [...held].sort((a, b) => b.remainingTtlMs - a.remainingTtlMs);
    const fencingToken = Math.max(...held.map((h) => h.fencingToken));
    holders.push({ ...(sorted[quorum - 1] as SemaphoreHolder), fencingToken });
  }
  holders.sort((a, b) => a.remainingTtlMs - b.remainingTtlMs);
  const first = holders[0];
  // A key of another kind at the name on a quorum holds every permit (as on one server).
  const foreign = answered.filter((n) => n.locked && n.holders.length === 0);
  const other = foreign.length >= quorum ? foreign[0] : undefined;
  return {
    locked: first !== undefined || other !== undefined,
    ownerToken: first ? first.token : other?.ownerToken,
    remainingTtlMs: first ? first.remainingTtlMs : other?.remainingTtlMs,
    lastFencingToken: Math.max(0, ...answered.map((n) => n.lastFencingToken)),
    holderLabel: first?.label,
    limit: (answered[0] as SemaphoreState).limit,
    permitsHeld: holders.reduce((sum, holder) => sum + holder.permits, 0),
    holders,
    queueLength: Math.max(0, ...answered.map((n) => n.queueLength)),
    nodes,
  };
}

/**
 * The permits held as a quorum-holding caller must assume, from the nodes that answered a read
 * made after its grants were in place (undefined: no answer): every holder seen on at least
 * `answered + quorum − nodes` of them. Any holder valid now holds a quorum, which shares at least
 * that many nodes with the ones read, so none is missed; a holder seen on fewer may be counted
 * too (one being granted or given back), which only costs a retry. Undefined when fewer than a
 * quorum answered (nothing can be concluded).
 *
 * Why a semaphore needs this and a mutex does not: two quorums always share a node, but three need
 * not. With limit 2 on servers A, B, C, three callers can each hold a quorum ({A,B}, {B,C}, {A,C})
 * while every server holds only two of them. The last of those callers to be granted reads after
 * the others' grants were in place, sees all three, and gives its grant back.
 */
export function permitsSeen(
  states: readonly (SemaphoreState | undefined)[],
  quorum: number,
): number | undefined {
  const answered = states.filter((n): n is SemaphoreState => n !== undefined);
  if (answered.length < quorum) return undefined;
  const atLeast = Math.max(1, answered.length + quorum - states.length);
  const seen = new Map<string, { nodes: number; permits: number }>();
  for (const node of answered) {
    for (const holder of node.holders) {
      const known = seen.get(holder.token);
      seen.set(holder.token, {
        nodes: (known?.nodes ?? 0) + 1,
        permits: Math.max(known?.permits ?? 0, holder.permits),
      });
    }
  }
  let permits = 0;
  for (const holder of seen.values()) if (holder.nodes >= atLeast) permits += holder.permits;
  return permits;
}
