import type { ClientContext } from '../adapters/client-context.js';
import { runScript } from '../adapters/run-script.js';
import { Backoff } from '../backoff.js';
import type { Clock } from '../clock.js';
import { QuorumError } from '../errors.js';
import type { ScriptCall } from '../protocol/call.js';
import { raiseFence } from '../protocol/fencing-counter.js';
import type { LockKeys } from '../protocol/keys.js';
import type { LockState } from '../protocol/lock-state.js';
import { fanOut, type NodeReply, nodeOutcome } from './fan-out.js';
import type { NodeGrant } from './line-place.js';
import { quorumSize, tally, verdict } from './quorum.js';

/** A call re-sent to one node after a failure backs off on this schedule. */
const RESEND_FIRST_MS = 5;
const RESEND_MAX_MS = 100;

/** A RedlockMutex's state: the quorum's view, and each node's own (undefined: it did not answer). */
export interface RedlockState extends LockState {
  readonly nodes: readonly (LockState | undefined)[];
}

/**
 * The servers of one Redlock and the ways it asks them: one typed call on every node at once,
 * settled as soon as the quorum's answer is known; a yes/no answer of the quorum; a call re-sent in
 * the background to a node that missed it; the fencing counter raised on a quorum; the quorum's
 * view of the lock. It knows nothing of lines, waiters or leases.
 */
export class QuorumNodes {
  /** How many nodes make a quorum: ⌊N/2⌋ + 1. */
  readonly quorum: number;

  constructor(
    /** The lock's name, for errors. */
    private readonly lockName: string,
    /** One context per node, in the order the clients were given. */
    readonly contexts: readonly ClientContext[],
  ) {
    this.quorum = quorumSize(contexts.length);
  }

  get size(): number {
    return this.contexts.length;
  }

  /** One typed call on one node. */
  run<Result>(node: number, call: ScriptCall<Result>): Promise<Result> {
    return runScript(this.contexts[node] as ClientContext, call);
  }

  /**
   * One request per node, all at once: `call`, or what `send(node)` sends. With `yes` (which replies
   * count toward the quorum) it settles as soon as the quorum's outcome is decided; without, once
   * every node answered or ran past `timeoutMs`. `failedOn(node)` hears of every node whose request
   * failed or timed out, also after the fan-out settled.
   */
  async ask<Result>(
    call: ScriptCall<Result> | ((node: number) => Promise<Result>),
    timeoutMs: number,
    yes?: (result: Result) => boolean,
    failedOn?: (node: number) => void,
  ): Promise<NodeReply<Result>[]> {
    const { size } = this;
    const replies = await fanOut(
      size,
      (node) => {
        const sent = typeof call === 'function' ? call(node) : this.run(node, call);
        if (failedOn) sent.catch(() => failedOn(node));
        return sent;
      },
      timeoutMs,
      yes ? (known) => verdict(tally(known.map((r) => nodeOutcome(r, yes))), size) !== 'open' : undefined,
    );
    if (failedOn) for (const r of replies) if (r.outcome === 'timed-out') failedOn(r.node);
    return replies;
  }

  /**
   * A yes/no call on every node: true with a quorum of yes, false when the noes rule a quorum out;
   * rejects with a `QuorumError` (`operation` names it) when failures do. Settles as soon as that
   * is known.
   */
  async answer(
    operation: string,
    call: ScriptCall<boolean>,
    timeoutMs: number,
    failedOn?: (node: number) => void,
  ): Promise<boolean> {
    const replies = await this.ask(call, timeoutMs, (yes) => yes, failedOn);
    const outcomes = replies.map((r) => nodeOutcome(r, (yes) => yes));
    const decision = verdict(tally(outcomes), this.size);
    if (decision === 'won') return true;
    if (decision === 'held') return false;
    throw new QuorumError(this.lockName, operation, this.quorum, outcomes);
  }

  /** Sends `call` to the nodes `which` names and waits for their answers (within `timeoutMs`). */
  async sendTo(
    call: ScriptCall<boolean>,
    timeoutMs: number,
    which: (node: number) => boolean,
  ): Promise<void> {
    await this.ask((node) => (which(node) ? this.run(node, call) : Promise.resolve(false)), timeoutMs);
  }

  /**
   * Sends `call()` again to `node`, in the background, until the node answers or `clock` passes
   * `until`: a release or a leave that never arrived would leave the token in that node's line.
   */
  resend(
    node: number,
    call: () => ScriptCall<boolean>,
    timeoutMs: number,
    clock: Clock,
    until: number,
  ): void {
    const backoff = new Backoff({ firstMs: RESEND_FIRST_MS, maxMs: RESEND_MAX_MS });
    const retry = async (): Promise<void> => {
      while (clock.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, backoff.next()).unref());
        const [reply] = await fanOut(1, () => this.run(node, call()), timeoutMs);
        if (reply?.outcome === 'value') return;
      }
    };
    void retry();
  }

  /**
   * Raises the fencing counter to `fencingToken` on as many nodes as a quorum still needs (`have`
   * nodes handed out that very value, so hold it already); true once a quorum holds at least it. Any
   * later quorum shares a node with that one, so it starts above. Nodes that granted this call come
   * first (they just answered); a node that fails is replaced by the next one, in another wave, so
   * only a fault costs a second round trip.
   */
  async raiseFence(
    keys: LockKeys,
    fencingToken: number,
    grants: readonly (NodeGrant | undefined)[],
    have: number,
    timeoutMs: number,
  ): Promise<boolean> {
    const nodes = grants.map((grant, node) => ({ grant, node }));
    const candidates = [
      ...nodes.filter(({ grant }) => grant && grant.fencingToken !== fencingToken),
      ...nodes.filter(({ grant }) => !grant),
    ].map(({ node }) => node);
    const call = raiseFence(keys, { atLeast: fencingToken });
    let written = have;
    while (written < this.quorum && candidates.length > 0) {
      const wave = candidates.splice(0, this.quorum - written);
      const replies = await fanOut(wave.length, (i) => this.run(wave[i] as number, call), timeoutMs);
      written += replies.filter((r) => r.outcome === 'value').length;
    }
    return written >= this.quorum;
  }

  /** The quorum's view: the owner a quorum agrees on; rejects without a quorum of answers. */
  async inspect(call: ScriptCall<LockState>, timeoutMs: number): Promise<RedlockState> {
    const replies = await this.ask(call, timeoutMs);
    const nodes = replies.map((r): LockState | undefined => {
      if (r.outcome !== 'value') return undefined;
      const { locked, ownerToken, remainingTtlMs, lastFencingToken, holderLabel } = r.value;
      return { locked, ownerToken, remainingTtlMs, lastFencingToken, holderLabel };
    });
    const answered = nodes.filter((n): n is LockState => n !== undefined);
    if (answered.length < this.quorum) {
      const outcomes = replies.map((r) => nodeOutcome(r, () => true));
      throw new QuorumError(this.lockName, 'inspect', this.quorum, outcomes);
    }
    const lastFencingToken = Math.max(...answered.map((n) => n.lastFencingToken));
    const owners = new Map<string, number[]>();
    for (const node of answered) {
      if (node.ownerToken === undefined) continue;
      owners.set(node.ownerToken, [...(owners.get(node.ownerToken) ?? []), node.remainingTtlMs ?? 0]);
    }
    for (const [ownerToken, ttls] of owners) {
      if (ttls.length < this.quorum) continue;
      // Held by a quorum for as long as the quorum-th longest of its keys lives.
      const remainingTtlMs = [...ttls].sort((a, b) => b - a)[this.quorum - 1];
      const holderLabel = answered.find((n) => n.ownerToken === ownerToken)?.holderLabel;
      return { locked: true, ownerToken, remainingTtlMs, lastFencingToken, holderLabel, nodes };
    }
    return {
      locked: false,
      ownerToken: undefined,
      remainingTtlMs: undefined,
      lastFencingToken,
      holderLabel: undefined,
      nodes,
    };
  }
}
