import { hubFor } from '../adapters/subscriber-hub.js';
import { Backoff } from '../backoff.js';
import { QuorumError } from '../errors.js';
import type { LockOptions } from '../options.js';
import type { Plan } from '../plan.js';
import type { Waiter } from '../primitives/hand-off-waiter.js';
import type { ScriptCall } from '../protocol/call.js';
import type { HandOffAcquireResult } from '../protocol/hand-off.js';
import type { LockKeys } from '../protocol/keys.js';
import type { Attempts, Outcome } from '../waiting/attempts.js';
import { type QueueEntry, Ticket } from '../waiting/ticket.js';
import { Wake, type WakeChannel } from '../waiting/wake.js';
import { type NodeReply, nodeOutcome } from './fan-out.js';
import { LinePlace, type NodeGrant } from './line-place.js';
import { quorumFreeInMs, SPLIT_BACKOFF_MAX_MS, tally } from './quorum.js';
import type { QuorumNodes } from './quorum-nodes.js';

/** What the quorum's waiting needs of a Redlock kind's options (the RedlockMutex's and others'). */
export interface QuorumWaitOptions extends LockOptions {
  nodeTimeoutMs: number;
  waiterTtlMs: number;
}

/** One node's part of one attempt, as the quorum's waiting asks a kind to send it. */
export interface NodeRequest {
  readonly token: string;
  /** The call's lease TTL and holder label. */
  readonly ttlMs: number;
  readonly label: string;
  /** This attempt's entry in that node's queue (its channel, how long it lives). */
  readonly entry: QueueEntry;
  /** Whether an earlier attempt of this call may have queued it on that node. */
  readonly maybeQueued: boolean;
  /** This call's place in every node's line, and when it took it. */
  readonly line: LinePlace;
  /** When (`clock.now()`) the attempt was sent, and the caller's wall clock then. */
  readonly sentAt: number;
  readonly wallNow: number;
  /**
   * Whether no later call of this token has gone out to that node since (QuorumNodes.inOrder): the
   * kind passes it to its script call as `resendAsEval` (QuorumNodes.run).
   */
  readonly latest: () => boolean;
}

/**
 * What one Redlock kind brings to the quorum's waiting: its per-node scripts. The waiting itself
 * (fan-out, quorum of grants, minority give-back, fencing write-back, hand-offs heard) is the same
 * for every kind whose per-node script grants or queues and hands off with "token:fence:time".
 */
export interface QuorumKind {
  /** The lock's name, for errors. */
  readonly name: string;
  /** The keys whose fencing counter a quorum's token is written back to. */
  readonly fenceKeys: Pick<LockKeys, 'fence' | 'lock'>;
  /** Per node: the channel this client's waiters hear that node's hand-offs on. */
  readonly grantChannels: readonly string[];
  /** Enqueue-or-acquire on one node. */
  acquire(node: number, request: NodeRequest): Promise<HandOffAcquireResult>;
  /**
   * A give-back of `token`: makes each node's release as it goes out to that node (its stamp then
   * follows every attempt sent there before it: QuorumNodes.giveBack). `ttlMs`: the TTL the call
   * asked for (its tombstone's lifetime: `tombstoneKeepMs`).
   */
  releaseCall(token: string, ttlMs: number): () => ScriptCall<boolean>;
  /**
   * The hand-off-after window (ms): until the first waiter has waited this long, a release may free
   * the lock without a word to it, so it looks again once the window is over. 0: none.
   */
  readonly handOffAfterMs: number;
  /**
   * A check of a quorum's grant before it counts, read after the grants are in place (a kind whose
   * per-node grants alone do not make it safe: a semaphore's, see redlock-semaphore.ts). False:
   * the grant is given back everywhere and the call steps to the back of the line. Absent: none.
   */
  confirm?(token: string, timeoutMs: number): Promise<boolean>;
}

/** The per-node timeout for a TTL: `nodeTimeoutMs`, at most a third of the TTL. */
export function nodeTimeoutFor(nodeTimeoutMs: number, ttlMs: number): number {
  return Math.max(1, Math.min(nodeTimeoutMs, Math.floor(ttlMs / 3)));
}

/**
 * How long a release or an inspection waits for a node's answer. Unlike an acquisition's, its
 * wait costs no validity, so a busy node gets longer than `nodeTimeoutMs`: up to a third of the
 * TTL, at most 2 s (a release settles as soon as a quorum answered, so a node that is down costs
 * nothing while the others answer).
 */
export function answerWaitFor(nodeTimeoutMs: number, ttlMs: number): number {
  return Math.max(nodeTimeoutMs, Math.min(2_000, Math.floor(ttlMs / 3)));
}

/**
 * The attempts of one acquire call over a quorum of nodes, each keeping a line of waiters (see
 * RedlockMutex). An attempt sends to every node at once and decides as soon as the outcome is
 * known; it counts only with a quorum and validity left (ttl − elapsed − drift, from before the
 * first send, or from the quorum's hand-off). A minority held for longer than a node may take to
 * answer is given back everywhere and the call steps to the back of the line, so it never blocks
 * the others. The fencing token is the highest over the quorum, written back to a quorum (when it
 * is not there yet: claimed, see QuorumNodes.claimFence) before the acquisition counts.
 */
export function quorumAttempts<Options extends QuorumWaitOptions>(
  nodes: QuorumNodes,
  kind: QuorumKind,
  plan: Plan<Options>,
): Attempts {
  const { token, options } = plan;
  const { quorum } = nodes;
  const line = new LinePlace(token, nodes.size, options.clock, quorum);
  // A single try never joins the line (nothing would hear its hand-off).
  const joinUntil = plan.mode === 'wait' ? plan.deadline : undefined;
  const ticket = new Ticket(joinUntil, options.waiterTtlMs, options.wakeOnRelease);
  const channels = nodes.contexts.map(
    (node, i): WakeChannel => ({
      hub: hubFor(node),
      channel: kind.grantChannels[i] as string,
      accept: (message) => (line.waiters[i] as Waiter).hear(message),
    }),
  );
  const call = new QuorumCall(nodes, kind, plan, line, ticket, channels);
  return {
    attempt: () => {
      line.collectHandOffs();
      const held = line.held();
      if (held >= quorum) return call.won(undefined);
      // Part of a hand-off heard: the release reaches the nodes one by one, and the other nodes'
      // messages are on their way. Wait for them a while before asking.
      const graceMs = nodeTimeoutFor(options.nodeTimeoutMs, options.ttlMs);
      const minorityMs = line.minorityForMs();
      if (held > 0 && minorityMs < graceMs) {
        return { acquired: false, holderPttlMs: Math.max(1, graceMs - minorityMs) };
      }
      return call.attempt();
    },
    wake: options.wakeOnRelease ? new Wake(channels) : undefined,
  };
}

/** One acquire call's state across its attempts. */
class QuorumCall<Options extends QuorumWaitOptions> {
  /** Split votes in a row back off further and further, in units of the attempt's duration. */
  private readonly splits = new Backoff({ firstMs: 1, maxMs: SPLIT_BACKOFF_MAX_MS, jitter: 'full' });
  private readonly timeoutMs: number;
  /**
   * How long a call of this one to a node waits for its earlier ones there (QuorumNodes.inOrder):
   * a release's answer time, longer than `timeoutMs`, so that a give-back answered NOSCRIPT by a
   * slow node is on the wire as EVAL before the next attempt.
   */
  private readonly orderWaitMs: number;

  constructor(
    private readonly nodes: QuorumNodes,
    private readonly kind: QuorumKind,
    private readonly plan: Plan<Options>,
    private readonly line: LinePlace,
    private readonly ticket: Ticket,
    private readonly channels: readonly WakeChannel[],
  ) {
    this.timeoutMs = nodeTimeoutFor(plan.options.nodeTimeoutMs, plan.options.ttlMs);
    this.orderWaitMs = answerWaitFor(plan.options.nodeTimeoutMs, plan.options.ttlMs);
  }

  /**
   * One quorum attempt: the kind's enqueue-or-acquire on every node at once. With a quorum of grants
   * (from this reply or heard hand-offs) it is an acquisition; with a minority held for longer than
   * a node may take to answer, every node is given back and the call goes to the back of the line
   * (the nodes disagree on who is next: one missed a waiter, or a single try took a free node), so
   * a minority never blocks the others.
   */
  async attempt(): Promise<Outcome> {
    const { plan, line, ticket, nodes, kind, splits, timeoutMs } = this;
    const { options } = plan;
    const { clock } = options;
    const sentAt = clock.now();
    const sentAtWall = clock.wallNow?.();
    const wallNow = sentAtWall ?? Date.now();
    // Per node: no channel when the caller does not listen, or once subscribing to it failed (see
    // Ticket); the line's entry takes each attempt's channel.
    ticket.join(sentAt);
    const entries = this.channels.map((channel) => ticket.entry(channel));
    const replies = await this.sendToLines(entries, sentAt, wallNow);
    const { quorum } = nodes;
    line.collectHandOffs();
    if (line.held() >= quorum) {
      splits.reset();
      return this.won({ sentAt, sentAtWall });
    }
    const outcomes = replies.map((reply) => nodeOutcome(reply, (r) => r.acquired));
    const counted = tally(outcomes);
    if (plan.mode === 'try') {
      // A single try keeps nothing: every node but those that said no (a node that did not answer
      // yet may still take it) is given back before it returns.
      await this.giveBack((node) => outcomes[node]?.outcome !== 'held');
      line.gaveBack();
    }
    // A minority is handled before a node's failure counts: a waiter that holds some nodes while
    // another node is down must not keep them (the checks below would never be reached, and two
    // waiters each holding one of the two live nodes would wait on each other for the outage).
    if (line.held() > 0 && line.minorityForMs() >= timeoutMs) {
      // A minority nobody will complete (the nodes disagree on who is next: one missed a waiter,
      // a node is down, or a single try took a free node): give everything back and step to the
      // back of the line.
      return this.stepBack(sentAt);
    }
    splits.reset();
    if (line.held() > 0) {
      // The rest of a hand-off may be on its way: wait for it, a node's answer time at most.
      return { acquired: false, holderPttlMs: Math.max(1, timeoutMs - line.minorityForMs()) };
    }
    if (counted.held < nodes.size - quorum + 1) {
      throw new QuorumError(kind.name, 'acquire', quorum, outcomes);
    }
    return this.notYet(replies);
  }

  /**
   * The kind's enqueue-or-acquire on every node at once, each with this call's place and its
   * per-node channel; settles as soon as the quorum's outcome is known. Each reply is recorded in
   * the line as it comes, also after the fan-out settled: a grant is this call's.
   */
  private sendToLines(
    entries: readonly QueueEntry[],
    sentAt: number,
    wallNow: number,
  ): Promise<NodeReply<HandOffAcquireResult>[]> {
    const { line, kind } = this;
    const { token } = this.plan;
    const generation = line.generation;
    // A give-back of this call still re-sent somewhere would land behind this attempt there.
    this.nodes.stopResends(token);
    const send = (node: number) => {
      const request: Omit<NodeRequest, 'latest'> = {
        token,
        ttlMs: this.plan.options.ttlMs,
        label: this.plan.options.label,
        entry: entries[node] as QueueEntry,
        maybeQueued: (line.waiters[node] as Waiter).noteAttempt(),
        line,
        sentAt,
        wallNow,
      };
      // After this call's give-backs on that node, never ahead of one (QuorumNodes.inOrder).
      return this.nodes
        .inOrder(token, node, this.orderWaitMs, (latest) => kind.acquire(node, { ...request, latest }))
        .then((reply) => {
          line.noteReply(node, sentAt, generation, reply);
          return reply;
        });
    };
    return this.nodes.ask(send, this.timeoutMs, (reply) => reply.acquired);
  }

  /**
   * A queued attempt's outcome: wait until a quorum may be free (or the hand-off-after window ends),
   * renewing the places before they expire.
   */
  private notYet(replies: readonly NodeReply<HandOffAcquireResult>[]): Outcome {
    const { ticket, line } = this;
    const { clock } = this.plan.options;
    const { handOffAfterMs } = this.kind;
    const bounds = replies.flatMap((r) =>
      r.outcome === 'value' && !r.value.acquired ? [r.value.waitBoundMs] : [],
    );
    const bound = quorumFreeInMs(bounds, this.nodes.size);
    // Until this call has waited `handOffAfterMs`, a release may free the lock without a word to
    // it: it looks again once its window is over (then it is served first).
    const dueInMs =
      ticket.queued && handOffAfterMs > 0
        ? line.place + handOffAfterMs - (clock.wallNow?.() ?? Date.now()) + 1
        : 0;
    const holderPttlMs = bound >= 0 ? Math.max(1, bound) : Number.POSITIVE_INFINITY;
    return {
      acquired: false,
      holderPttlMs: dueInMs > 0 ? Math.min(holderPttlMs, Math.ceil(dueInMs)) : holderPttlMs,
      renewInMs: ticket.renewInMs(),
      leftState: ticket.queued,
    };
  }

  /**
   * The acquisition a quorum of grants makes: the highest of their fencing tokens, claimed on a
   * quorum (QuorumNodes.claimFence: none needed when a quorum handed out that very value, as when
   * the nodes' counters move together, see redlock-acquire.lua), counted from the instant the
   * quorum's grants date from. Known without a round trip when no claim or check is needed.
   */
  won(
    sent: { readonly sentAt: number; readonly sentAtWall: number | undefined } | undefined,
  ): Outcome | Promise<Outcome> {
    const { line, nodes, kind } = this;
    const grants = [...line.granted()];
    const sentAt = line.quorumSentAt();
    let fencingToken = 0;
    for (const grant of grants)
      if (grant && grant.fencingToken > fencingToken) fencingToken = grant.fencingToken;
    line.clear();
    const outcome: Outcome = {
      acquired: true,
      fencingToken,
      sentAt,
      // The wall clock was read with this attempt's send only: valid when the quorum dates from it.
      sentAtWall: sent?.sentAt === sentAt ? sent.sentAtWall : undefined,
    };
    const have = grants.filter((g) => g?.fencingToken === fencingToken).length;
    const { quorum } = nodes;
    if (have >= quorum && !kind.confirm) return outcome;
    return this.claimed(fencingToken, grants, have).then((claimed) => {
      if (claimed > 0) return { ...outcome, fencingToken: claimed };
      return this.stepBack(sent?.sentAt ?? sentAt);
    });
  }

  /**
   * The fencing token claimed on a quorum (when a quorum did not hand it out), then the kind's
   * check: the token once both hold, 0 when the claim was refused (another holder granted at once
   * took that value) or the check failed. Rejects with a `QuorumError` (the grant given back) when
   * no quorum answered the claim.
   */
  private async claimed(
    fencingToken: number,
    grants: readonly (NodeGrant | undefined)[],
    have: number,
  ): Promise<number> {
    const { nodes, kind, timeoutMs } = this;
    const { token } = this.plan;
    const { quorum } = nodes;
    const claimed =
      have >= quorum
        ? fencingToken
        : await nodes.claimFence(kind.fenceKeys, fencingToken, grants, have, timeoutMs);
    if (claimed === undefined) {
      await this.giveBack(() => true);
      throw new QuorumError(kind.name, 'acquire (fencing token write-back)', quorum, []);
    }
    if (claimed === 0 || !kind.confirm) return claimed;
    return (await kind.confirm(token, timeoutMs)) ? claimed : 0;
  }

  /**
   * Gives this call's grants back on the nodes `which` names (QuorumNodes.giveBack: each node's
   * release made as it goes out there, in order with this call's other calls to it).
   */
  private giveBack(which: (node: number) => boolean): Promise<void> {
    const { nodes, kind, timeoutMs, orderWaitMs } = this;
    const { token, options } = this.plan;
    return nodes.giveBack(token, kind.releaseCall(token, options.ttlMs), timeoutMs, orderWaitMs, which);
  }

  /**
   * A grant the kind's check or the fencing claim refused: given back everywhere, and the call steps to the back of the
   * line, backing off as after a split vote (the other callers it collided with do the same).
   */
  private async stepBack(sentAt: number): Promise<Outcome> {
    const { line, splits } = this;
    const { options } = this.plan;
    await this.giveBack(() => true);
    line.gaveBack();
    line.moveToBack();
    const backoffMs = splits.next(Math.max(1, options.clock.now() - sentAt));
    return { acquired: false, holderPttlMs: Math.max(1, backoffMs) };
  }
}
