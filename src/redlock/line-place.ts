import type { Clock } from '../clock.js';
import { Waiter } from '../primitives/hand-off-waiter.js';

/** One node's grant to this call: its fencing token, and the local instant its TTL counts from. */
export interface NodeGrant {
  readonly fencingToken: number;
  readonly sentAt: number;
}

/**
 * One acquire call's place in a RedlockMutex's line, on every node: the place it brings (the same
 * number everywhere, so the nodes agree on who is next), and per node a `Waiter` that hears that
 * node's hand-off and anchors its validity (hand-off-waiter.ts), plus the nodes that granted it the lock
 * so far. A quorum of grants is an acquisition.
 */
export class LinePlace {
  /**
   * The place this call brings to every node's line: its wall clock (ms) at its first attempt, or
   * when it last went to the back of the line.
   */
  place: number;
  /** When (`clock.now()`) `place` was taken: each server checks the place against its age. */
  placedAt: number;
  /** Per node: hears and anchors that node's hand-off (new ones after a give-back). */
  waiters: readonly Waiter[];
  /**
   * Counts give-backs: a reply to an attempt sent before the latest one, or a hand-off heard before
   * it, may describe a grant that give-back undid, and is not taken for a grant.
   */
  generation = 0;
  /** Per node: the grant this call holds there, as far as it knows. */
  private readonly grants: (NodeGrant | undefined)[];
  /** When this call first held a minority of grants (NaN: it does not). */
  private minoritySince = Number.NaN;

  constructor(
    private readonly token: string,
    nodes: number,
    private readonly clock: Clock,
    private readonly quorum: number,
  ) {
    this.place = Math.floor(clock.wallNow?.() ?? Date.now());
    this.placedAt = clock.now();
    this.waiters = this.newWaiters(nodes);
    this.grants = new Array(nodes).fill(undefined);
  }

  /** Moves every hand-off heard (and anchored) since the last look into the grants. */
  collectHandOffs(): void {
    for (let node = 0; node < this.waiters.length; node += 1) {
      const handOff = (this.waiters[node] as Waiter).handOff();
      if (handOff) this.grants[node] = handOff;
    }
    this.noteMinority();
  }

  /** Records one node's reply to an attempt sent at `sentAt`, in `generation` (see there). */
  noteReply(
    node: number,
    sentAt: number,
    generation: number,
    reply: { acquired: true; fencingToken: number } | { acquired: false; serverTimeMs: number },
  ): void {
    if (generation !== this.generation) return;
    const waiter = this.waiters[node] as Waiter;
    if (reply.acquired) {
      waiter.noteGrant(reply.fencingToken);
      this.grants[node] = { fencingToken: reply.fencingToken, sentAt };
    } else {
      waiter.anchor(sentAt, reply.serverTimeMs);
      this.grants[node] = undefined;
    }
  }

  /** How many nodes granted this call the lock. */
  held(): number {
    let count = 0;
    for (const grant of this.grants) if (grant) count += 1;
    return count;
  }

  /** The grants, by node (undefined where this call holds nothing). */
  granted(): readonly (NodeGrant | undefined)[] {
    return this.grants;
  }

  /**
   * The instant a quorum of these grants counts from: each node's key lives a TTL from its own
   * grant, so a quorum holds until the quorum-th latest of them expires.
   */
  quorumSentAt(): number {
    const times = this.grants.flatMap((g) => (g ? [g.sentAt] : [])).sort((a, b) => b - a);
    return times[this.quorum - 1] as number;
  }

  /** How long this call has held a minority of grants (0 when it holds none, or a quorum). */
  minorityForMs(): number {
    this.noteMinority();
    return Number.isNaN(this.minoritySince) ? 0 : this.clock.now() - this.minoritySince;
  }

  /**
   * Goes to the back of the line (after giving everything back: a place already in a node's line
   * is not moved, so the call must have left every line first).
   */
  moveToBack(): void {
    this.place = Math.max(this.place, Math.floor(this.clock.wallNow?.() ?? Date.now()));
    this.placedAt = this.clock.now();
  }

  /**
   * Forgets every grant (used, or given back), and the replies still in flight: a grant used may yet
   * be given back (no validity left), so a late reply is of a grant that may be gone.
   */
  clear(): void {
    this.grants.fill(undefined);
    this.minoritySince = Number.NaN;
    this.generation += 1;
  }

  /**
   * After a give-back: forgets every grant, and everything in flight. A reply or a hand-off message
   * that comes later may be of a grant the give-back undid (a release that followed it on the same
   * connection): replies of earlier attempts are ignored, and each node's hand-offs count again only
   * once a new attempt's reply anchored that node (hand-off-waiter.ts drops a hand-off older than it).
   */
  gaveBack(): void {
    this.clear();
    this.waiters = this.waiters.map((old) => {
      const fresh = new Waiter(this.token, this.clock);
      // Whether this call may still be in that node's line (a give-back that timed out there).
      if (old.noteAttempt()) fresh.noteAttempt();
      return fresh;
    });
  }

  private newWaiters(nodes: number): Waiter[] {
    return Array.from({ length: nodes }, () => new Waiter(this.token, this.clock));
  }

  private noteMinority(): void {
    const held = this.held();
    if (held === 0 || held >= this.quorum) this.minoritySince = Number.NaN;
    else if (Number.isNaN(this.minoritySince)) this.minoritySince = this.clock.now();
  }
}
