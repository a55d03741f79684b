import { type ClientContext, contextFor } from '../adapters/client-context.js';
import type { RedisClient } from '../adapters/client-types.js';
import { runScript } from '../adapters/run-script.js';
import { hubFor } from '../adapters/subscriber-hub.js';
import { Backoff } from '../backoff.js';
import { QuorumError } from '../errors.js';
import type { EffectiveOptions } from '../options.js';
import type { Plan } from '../plan.js';
import type { Waiter } from '../primitives/hand-off-waiter.js';
import { LockShell } from '../primitives/lock-shell.js';
import type { ScriptCall } from '../protocol/call.js';
import { fairExtend, fairInspect } from '../protocol/fair-mutex.js';
import { raiseFence } from '../protocol/fencing-counter.js';
import { type LockKeys, lockKeys } from '../protocol/keys.js';
import type { LockState } from '../protocol/lock-state.js';
import { redlockAcquire, redlockRelease } from '../protocol/redlock.js';
import { checkClientList, checkName } from '../validation.js';
import type { Attempts, Outcome } from '../waiting/attempts.js';
import { type QueuePlace, Ticket } from '../waiting/ticket.js';
import { Wake, type WakeChannel } from '../waiting/wake.js';
import { fanOut, type NodeReply, nodeOutcome } from './fan-out.js';
import { LinePlace, type NodeGrant } from './line-place.js';
import { quorumFreeInMs, quorumSize, SPLIT_BACKOFF_MAX_MS, tally, verdict } from './quorum.js';
import { type RedlockOptions, resolveRedlockOptions } from './redlock-options.js';

/** A release retried on one node after a failure backs off on this schedule. */
const RELEASE_RETRY_FIRST_MS = 5;
const RELEASE_RETRY_MAX_MS = 100;

/** A RedlockMutex's state: the quorum's view, and each node's own (undefined: it did not answer). */
export interface RedlockState extends LockState {
  readonly nodes: readonly (LockState | undefined)[];
}

/**
 * A mutual-exclusion lock over N independent Redis servers (the Redlock algorithm): held while a
 * quorum (⌊N/2⌋+1) of them holds its token, so it survives the loss of a minority of servers.
 *
 * ```ts
 * const lock = new RedlockMutex([redisA, redisB, redisC], 'orders:42', { ttlMs: 10_000 });
 * await using lease = await lock.acquire();
 * ```
 *
 * Each server keeps a line of waiters ordered by the place each acquire call brings (its wall
 * clock when it first joined, the same number everywhere), so every server hands a release to the
 * same waiter, which holds the lock once a quorum of them handed it over (redlock-acquire.lua,
 * redlock-release.lua: the FairMutex's hand-off over that line). An attempt sends to every node at
 * once and decides as soon as the outcome is known; it counts only with a quorum and validity
 * left (ttl − elapsed − drift, from before the first send, or from the quorum's hand-off). A
 * minority held for longer than a node may take to answer is given back everywhere and the call
 * steps to the back of the line, so it never blocks the others. The fencing token is the highest
 * over the quorum, written back to a quorum (when it is not there yet) before the acquisition
 * counts. First come, first served; there is no Redlock Semaphore (docs/api.md, "RedlockMutex").
 */
export class RedlockMutex extends LockShell<RedlockOptions, RedlockState> {
  /** @internal The Redis keys of this lock, the same on every node. */
  readonly keys: LockKeys;
  /** @internal One context per node, in the order the clients were given. */
  protected readonly nodes: readonly ClientContext[];
  private readonly quorum: number;
  /** Per node: the channel this client's waiters hear that node's hand-offs on. */
  private readonly grantChannels: readonly string[];

  /** Checks the arguments in their order (clients, name, options) before anything reaches Redis. */
  constructor(clients: readonly RedisClient[], name: string, options?: Partial<RedlockOptions>) {
    const list = checkClientList('clients', clients);
    const checkedName = checkName('name', name);
    const nodes = list.map((client) => contextFor(client));
    super(checkedName, resolveRedlockOptions(options));
    this.nodes = nodes;
    this.quorum = quorumSize(nodes.length);
    this.keys = lockKeys(this.options.prefix, checkedName);
    this.grantChannels = nodes.map((node) => `${this.keys.grantedChannelPrefix}${node.clientId}`);
  }

  /** @internal */
  protected planAttempts(plan: Plan<RedlockOptions>): Attempts {
    const { token, options } = plan;
    const line = new LinePlace(token, this.nodes.length, options.clock, this.quorum);
    // A single try never joins the line (nothing would hear its hand-off).
    const joinUntil = plan.mode === 'wait' ? plan.deadline : undefined;
    const ticket = new Ticket(joinUntil, options.waiterTtlMs, options.wakeOnRelease);
    const channels = this.nodes.map(
      (node, i): WakeChannel => ({
        hub: hubFor(node),
        channel: this.grantChannels[i] as string,
        accept: (message) => (line.waiters[i] as Waiter).hear(message),
      }),
    );
    // Split votes in a row back off further and further, in units of the attempt's duration.
    const splits = new Backoff({ firstMs: 1, maxMs: SPLIT_BACKOFF_MAX_MS, jitter: 'full' });
    return {
      attempt: () => {
        line.collectHandOffs();
        const held = line.held();
        if (held >= this.quorum) return this.won(token, line, options, undefined);
        // Part of a hand-off heard: the release reaches the nodes one by one, and the other nodes'
        // messages are on their way. Wait for them a while before asking.
        const graceMs = this.nodeTimeoutMs(options.ttlMs);
        const minorityMs = line.minorityForMs();
        if (held > 0 && minorityMs < graceMs) {
          return { acquired: false, holderPttlMs: Math.max(1, graceMs - minorityMs) };
        }
        return this.attempt(plan, line, ticket, channels, splits);
      },
      wake: options.wakeOnRelease ? new Wake(channels) : undefined,
    };
  }

  /**
   * One quorum attempt: the line's enqueue-or-acquire on every node at once, each bringing this
   * call's place (redlock-acquire.lua). With a quorum of grants (from this reply or heard hand-offs)
   * it is an acquisition; with a minority held for longer than a node may take to answer, every
   * node is given back and the call goes to the back of the line (the nodes disagree on who is next:
   * one missed a waiter, or a single try took a free node), so a minority never blocks the others.
   */
  private async attempt(
    plan: Plan<RedlockOptions>,
    line: LinePlace,
    ticket: Ticket,
    channels: readonly WakeChannel[],
    splits: Backoff,
  ): Promise<Outcome> {
    const { token, options } = plan;
    const { clock } = options;
    const timeoutMs = this.nodeTimeoutMs(options.ttlMs);
    const sentAt = clock.now();
    const sentAtWall = clock.wallNow?.();
    const wallNow = sentAtWall ?? Date.now();
    const generation = line.generation;
    // Per node: no channel when the caller does not listen, or once subscribing to it failed (see
    // Ticket); the line's entry takes each attempt's channel.
    ticket.join(sentAt);
    const places = channels.map((channel) => ticket.place(channel));
    const replies = await fanOut(
      this.nodes.length,
      (node) => {
        const call = redlockAcquire(this.keys, {
          token,
          ttlMs: options.ttlMs,
          ...(places[node] as QueuePlace),
          maybeQueued: (line.waiters[node] as Waiter).noteAttempt(),
          barging: false,
          place: line.place,
          placeAgeMs: sentAt - line.placedAt,
          handOffAfterMs: options.handOffAfterMs,
          nowMs: wallNow,
        });
        // Recorded as each reply comes, also after the fan-out settled: a grant is this call's.
        return runScript(this.nodes[node] as ClientContext, call).then((reply) => {
          line.noteReply(node, sentAt, generation, reply);
          return reply;
        });
      },
      timeoutMs,
      (known) =>
        verdict(tally(known.map((r) => nodeOutcome(r, (x) => x.acquired))), this.nodes.length) !== 'open',
    );
    line.collectHandOffs();
    if (line.held() >= this.quorum) {
      splits.reset();
      return this.won(token, line, options, { sentAt, sentAtWall });
    }
    const outcomes = replies.map((reply) => nodeOutcome(reply, (r) => r.acquired));
    const counted = tally(outcomes);
    if (plan.mode === 'try') {
      // A single try keeps nothing: every node but those that said no (a node that did not answer
      // yet may still take it) is given back before it returns.
      await this.leaveEverywhere(token, timeoutMs, (node) => outcomes[node]?.outcome !== 'held');
      line.gaveBack();
    }
    // A minority is handled before a node's failure counts: a waiter that holds some nodes while
    // another node is down must not keep them (the checks below would never be reached, and two
    // waiters each holding one of the two live nodes would wait on each other for the outage).
    if (line.held() > 0 && line.minorityForMs() >= timeoutMs) {
      // A minority nobody will complete (the nodes disagree on who is next: one missed a waiter,
      // a node is down, or a single try took a free node): give everything back and step to the
      // back of the line.
      await this.leaveEverywhere(token, timeoutMs, () => true);
      line.gaveBack();
      line.moveToBack();
      const backoffMs = splits.next(Math.max(1, clock.now() - sentAt));
      return { acquired: false, holderPttlMs: Math.max(1, backoffMs) };
    }
    splits.reset();
    if (line.held() > 0) {
      // The rest of a hand-off may be on its way: wait for it, a node's answer time at most.
      return { acquired: false, holderPttlMs: Math.max(1, timeoutMs - line.minorityForMs()) };
    }
    if (counted.held < this.nodes.length - this.quorum + 1) {
      throw new QuorumError(this.name, 'acquire', this.quorum, outcomes);
    }
    const bounds = replies.flatMap((r) =>
      r.outcome === 'value' && !r.value.acquired ? [r.value.waitBoundMs] : [],
    );
    const bound = quorumFreeInMs(bounds, this.nodes.length);
    // Until this call has waited `handOffAfterMs`, a release may free the lock without a word to
    // it: it looks again once its window is over (then it is served first).
    const dueInMs =
      ticket.queued && options.handOffAfterMs > 0
        ? line.place + options.handOffAfterMs - (clock.wallNow?.() ?? Date.now()) + 1
        : 0;
    const holderPttlMs = bound >= 0 ? Math.max(1, bound) : Number.POSITIVE_INFINITY;
    return {
      acquired: false,
      holderPttlMs: dueInMs > 0 ? Math.min(holderPttlMs, Math.ceil(dueInMs)) : holderPttlMs,
      // Renew the places before they expire, at the silent pace where a hand-off may be silent.
      renewInMs: ticket.renewInMs(),
      leftState: ticket.queued,
    };
  }

  /**
   * The acquisition a quorum of grants makes: the highest of their fencing tokens, written back to
   * as many nodes as a quorum still needs (usually none: the nodes' counters move together, see
   * redlock-acquire.lua), counted from the instant the quorum's grants date from. Known without a
   * round trip when no write-back is needed (every hand-off of a contended lock).
   */
  private won(
    token: string,
    line: LinePlace,
    options: EffectiveOptions<RedlockOptions>,
    sent: { readonly sentAt: number; readonly sentAtWall: number | undefined } | undefined,
  ): Outcome | Promise<Outcome> {
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
    if (have >= this.quorum) return outcome;
    const timeoutMs = this.nodeTimeoutMs(options.ttlMs);
    return this.writeBackFence(fencingToken, grants, have, timeoutMs).then(async (written) => {
      if (written) return outcome;
      await this.leaveEverywhere(token, timeoutMs, () => true);
      throw new QuorumError(this.name, 'acquire (fencing token write-back)', this.quorum, []);
    });
  }

  /**
   * Raises the fencing counter to `fencingToken` on as many nodes as a quorum still needs (`have`
   * nodes handed out that very value, so hold it already); true once a quorum holds at least it. Any
   * later quorum shares a node with that one, so it starts above. Nodes that granted this call come
   * first (they just answered); a node that fails is replaced by the next one, in another wave, so
   * only a fault costs a second round trip.
   */
  private async writeBackFence(
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
    const call = raiseFence(this.keys, { atLeast: fencingToken });
    let written = have;
    while (written < this.quorum && candidates.length > 0) {
      const wave = candidates.splice(0, this.quorum - written);
      const replies = await fanOut(
        wave.length,
        (i) => runScript(this.nodes[wave[i] as number] as ClientContext, call),
        timeoutMs,
      );
      written += replies.filter((r) => r.outcome === 'value').length;
    }
    return written >= this.quorum;
  }

  /**
   * Releases whatever `token` holds and takes it out of the lines of the nodes `mayHold` names,
   * waiting for the answers (within the per-node timeout). A node where it held the lock hands it
   * to its next waiter.
   */
  private async leaveEverywhere(
    token: string,
    timeoutMs: number,
    mayHold: (node: number) => boolean,
  ): Promise<void> {
    const call = this.releaseCall(token);
    await fanOut(
      this.nodes.length,
      (node) => (mayHold(node) ? runScript(this.nodes[node] as ClientContext, call) : Promise.resolve(false)),
      timeoutMs,
    );
  }

  /** One node's release of `token` (the same call for every node: one wall-clock reading). */
  private releaseCall(token: string): ScriptCall<boolean> {
    return redlockRelease(this.keys, {
      token,
      skipUnreached: true,
      handOffAfterMs: this.options.handOffAfterMs,
      nowMs: this.options.clock.wallNow?.() ?? Date.now(),
    });
  }

  /**
   * @internal Releases on every node, each handing the lock to the first live waiter of its line
   * (the same waiter everywhere), or takes `token` out of the lines. True when a quorum released
   * it; false when so many nodes did not hold it that no quorum did. It is sent to every node, but
   * settles once a quorum answered: a node that is down costs no wait.
   */
  protected async sendRelease(token: string): Promise<boolean> {
    const startedAt = this.options.clock.now();
    return this.quorumAnswer('release', this.releaseCall(token), this.answerWaitMs(), true, (node) =>
      this.releaseAgain(node, token, startedAt),
    );
  }

  /**
   * Sends a release (or a leave) again to a node where it failed or got no answer, in the
   * background, until the node answers or a TTL has passed. A leave that never arrived leaves the
   * call in that node's line, and the node would later hand the lock to a call that is over (its
   * process still listens, so the hand-off is not skipped): held by nobody until its TTL runs out.
   */
  private releaseAgain(node: number, token: string, startedAt: number): void {
    const { clock, ttlMs } = this.options;
    const backoff = new Backoff({ firstMs: RELEASE_RETRY_FIRST_MS, maxMs: RELEASE_RETRY_MAX_MS });
    const retry = async (): Promise<void> => {
      while (clock.now() - startedAt < ttlMs) {
        await new Promise((resolve) => setTimeout(resolve, backoff.next()).unref());
        const [reply] = await fanOut(
          1,
          () => runScript(this.nodes[node] as ClientContext, this.releaseCall(token)),
          this.answerWaitMs(),
        );
        if (reply?.outcome === 'value') return;
      }
    };
    void retry();
  }

  /** @internal Compare-and-extend on every node: true once a quorum extended, false once none can. */
  protected sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.quorumAnswer(
      'extend',
      fairExtend(this.keys, { token, ttlMs }),
      this.nodeTimeoutMs(ttlMs),
      true,
    );
  }

  /**
   * Sends a yes/no call to every node: true with a quorum of yes, false when the noes rule a quorum
   * out; rejects with a `QuorumError` when failures do. `early`: settle as soon as that is known
   * (else wait for every node, within the per-node timeout, so each one has the request).
   */
  private async quorumAnswer(
    operation: string,
    call: ScriptCall<boolean>,
    timeoutMs: number,
    early: boolean,
    failedOn?: (node: number) => void,
  ): Promise<boolean> {
    const nodes = this.nodes.length;
    const outcomesOf = (replies: readonly NodeReply<boolean>[]) =>
      replies.map((r) => nodeOutcome(r, (yes) => yes));
    const replies = await this.fanOut(call, timeoutMs, (yes) => yes, early, failedOn);
    const outcomes = outcomesOf(replies);
    const decision = verdict(tally(outcomes), nodes);
    if (decision === 'won') return true;
    if (decision === 'held') return false;
    throw new QuorumError(this.name, operation, this.quorum, outcomes);
  }

  /** @internal The quorum's view: the owner a quorum agrees on; rejects without a quorum of answers. */
  protected async readState(): Promise<RedlockState> {
    const replies = await this.fanOut(fairInspect(this.keys), this.answerWaitMs(), () => true, false);
    const nodes = replies.map((r): LockState | undefined => {
      if (r.outcome !== 'value') return undefined;
      const { locked, ownerToken, remainingTtlMs, lastFencingToken } = r.value;
      return { locked, ownerToken, remainingTtlMs, lastFencingToken };
    });
    const answered = nodes.filter((n): n is LockState => n !== undefined);
    if (answered.length < this.quorum) {
      throw new QuorumError(
        this.name,
        'inspect',
        this.quorum,
        replies.map((r) => nodeOutcome(r, () => true)),
      );
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
      return { locked: true, ownerToken, remainingTtlMs, lastFencingToken, nodes };
    }
    return { locked: false, ownerToken: undefined, remainingTtlMs: undefined, lastFencingToken, nodes };
  }

  /**
   * One typed call on every node in parallel. `yes` tells a reply that counts toward the quorum;
   * with `early`, the fan-out settles as soon as the quorum's outcome is decided.
   */
  private async fanOut<Result>(
    call: ScriptCall<Result>,
    timeoutMs: number,
    yes: (result: Result) => boolean,
    early = true,
    failedOn?: (node: number) => void,
  ): Promise<NodeReply<Result>[]> {
    const nodes = this.nodes.length;
    const replies = await fanOut(
      nodes,
      (node) => {
        const sent = runScript(this.nodes[node] as ClientContext, call);
        // A request that fails after the fan-out settled (it was pending) is reported too.
        if (failedOn) sent.catch(() => failedOn(node));
        return sent;
      },
      timeoutMs,
      early ? (known) => verdict(tally(known.map((r) => nodeOutcome(r, yes))), nodes) !== 'open' : undefined,
    );
    if (failedOn) for (const r of replies) if (r.outcome === 'timed-out') failedOn(r.node);
    return replies;
  }

  /**
   * How long a release or an inspection waits for a node's answer. Unlike an acquisition's, its
   * wait costs no validity, so a busy node gets longer than `nodeTimeoutMs`: up to a third of the
   * TTL, at most 2 s (a release settles as soon as a quorum answered, so a node that is down costs
   * nothing while the others answer).
   */
  private answerWaitMs(): number {
    const { nodeTimeoutMs, ttlMs } = this.options;
    return Math.max(nodeTimeoutMs, Math.min(2_000, Math.floor(ttlMs / 3)));
  }

  /** The per-node timeout for a TTL: `nodeTimeoutMs`, at most a third of the TTL. */
  private nodeTimeoutMs(ttlMs: number): number {
    return Math.max(1, Math.min(this.options.nodeTimeoutMs, Math.floor(ttlMs / 3)));
  }
}
