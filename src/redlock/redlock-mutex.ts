import { clientChannel, contextFor } from '../adapters/client-context.js';
import type { RedisClient } from '../adapters/client-types.js';
import { hubFor } from '../adapters/subscriber-hub.js';
import { Backoff } from '../backoff.js';
import { batchBounds } from '../batching/batch-options.js';
import {
  type BatchBackend,
  type BatchBounds,
  existingLocalBatch,
  type LocalBatch,
  localBatchFor,
} from '../batching/local-batch.js';
import { QuorumError, UnsupportedClientError } from '../errors.js';
import type { EffectiveOptions } from '../options.js';
import type { GrantPath, Plan } from '../plan.js';
import type { Waiter } from '../primitives/hand-off-waiter.js';
import { LockShell } from '../primitives/lock-shell.js';
import type { ScriptCall } from '../protocol/call.js';
import {
  type HandOffAcquireResult,
  handOffExtend,
  handOffInspect,
  handOffReserveFences,
} from '../protocol/hand-off.js';
import { type LockKeys, lockKeys } from '../protocol/keys.js';
import { redlockAcquire, redlockRelease } from '../protocol/redlock.js';
import { checkClientList, checkName } from '../validation.js';
import type { Attempts, Outcome } from '../waiting/attempts.js';
import { type QueueEntry, Ticket } from '../waiting/ticket.js';
import { Wake, type WakeChannel } from '../waiting/wake.js';
import { type NodeReply, nodeOutcome } from './fan-out.js';
import { LinePlace } from './line-place.js';
import { quorumFreeInMs, SPLIT_BACKOFF_MAX_MS, tally } from './quorum.js';
import { QuorumNodes, type RedlockState } from './quorum-nodes.js';
import { type RedlockOptions, resolveRedlockOptions } from './redlock-options.js';

export type { RedlockState } from './quorum-nodes.js';

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
  /** @internal The servers, and how this lock asks them. */
  protected readonly nodes: QuorumNodes;
  /** Per node: the channel this client's waiters hear that node's hand-offs on. */
  private readonly grantChannels: readonly string[];

  /** What this process's batch of the lock calls back into. */
  private readonly batchBackend: BatchBackend = {
    ...this.backend,
    reserveFences: (token, ttlMs, count) => this.reserveFences(token, ttlMs, count),
  };

  /** Checks the arguments in their order (clients, name, options) before anything reaches Redis. */
  constructor(clients: readonly RedisClient[], name: string, options?: Partial<RedlockOptions>) {
    const list = checkClientList('clients', clients);
    const checkedName = checkName('name', name);
    const contexts = list.map((client) => contextFor(client));
    if (contexts.some((node) => node.topology === 'cluster')) {
      // Not tried: Redlock's servers are independent Redis servers, each a node of the quorum;
      // one Redis Cluster is one deployment, for a Mutex or any other kind.
      throw new UnsupportedClientError(
        'a cluster client (an ioredis Cluster or a node-redis createCluster()) as a RedlockMutex node. ' +
          'Pass one client per independent Redis server, or use a Mutex on the cluster client',
      );
    }
    super(checkedName, resolveRedlockOptions(options));
    this.nodes = new QuorumNodes(checkedName, contexts);
    this.keys = lockKeys(this.options.prefix, checkedName);
    this.grantChannels = contexts.map((node) => clientChannel(node, this.keys.grantedChannelPrefix));
  }

  /** @internal */
  protected planAttempts(plan: Plan<RedlockOptions>): Attempts {
    const { token, options } = plan;
    const { quorum } = this.nodes;
    const line = new LinePlace(token, this.nodes.size, options.clock, quorum);
    // A single try never joins the line (nothing would hear its hand-off).
    const joinUntil = plan.mode === 'wait' ? plan.deadline : undefined;
    const ticket = new Ticket(joinUntil, options.waiterTtlMs, options.wakeOnRelease);
    const channels = this.nodes.contexts.map(
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
        if (held >= quorum) return this.won(token, line, options, undefined);
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
    // Per node: no channel when the caller does not listen, or once subscribing to it failed (see
    // Ticket); the line's entry takes each attempt's channel.
    ticket.join(sentAt);
    const entries = channels.map((channel) => ticket.entry(channel));
    const replies = await this.sendToLines(plan, line, entries, sentAt, wallNow, timeoutMs);
    const { quorum } = this.nodes;
    line.collectHandOffs();
    if (line.held() >= quorum) {
      splits.reset();
      return this.won(token, line, options, { sentAt, sentAtWall });
    }
    const outcomes = replies.map((reply) => nodeOutcome(reply, (r) => r.acquired));
    const counted = tally(outcomes);
    if (plan.mode === 'try') {
      // A single try keeps nothing: every node but those that said no (a node that did not answer
      // yet may still take it) is given back before it returns.
      await this.nodes.sendTo(
        this.releaseCall(token),
        timeoutMs,
        (node) => outcomes[node]?.outcome !== 'held',
      );
      line.gaveBack();
    }
    // A minority is handled before a node's failure counts: a waiter that holds some nodes while
    // another node is down must not keep them (the checks below would never be reached, and two
    // waiters each holding one of the two live nodes would wait on each other for the outage).
    if (line.held() > 0 && line.minorityForMs() >= timeoutMs) {
      // A minority nobody will complete (the nodes disagree on who is next: one missed a waiter,
      // a node is down, or a single try took a free node): give everything back and step to the
      // back of the line.
      await this.nodes.sendTo(this.releaseCall(token), timeoutMs, () => true);
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
    if (counted.held < this.nodes.size - quorum + 1) {
      throw new QuorumError(this.name, 'acquire', quorum, outcomes);
    }
    return this.notYet(options, line, ticket, replies);
  }

  /**
   * The line's enqueue-or-acquire on every node at once, each bringing this call's place and its
   * per-node channel; settles as soon as the quorum's outcome is known. Each reply is recorded in
   * the line as it comes, also after the fan-out settled: a grant is this call's.
   */
  private sendToLines(
    plan: Plan<RedlockOptions>,
    line: LinePlace,
    entries: readonly QueueEntry[],
    sentAt: number,
    wallNow: number,
    timeoutMs: number,
  ): Promise<NodeReply<HandOffAcquireResult>[]> {
    const { token, options } = plan;
    const generation = line.generation;
    const send = (node: number) => {
      const call = redlockAcquire(this.keys, {
        token,
        ttlMs: options.ttlMs,
        ...(entries[node] as QueueEntry),
        maybeQueued: (line.waiters[node] as Waiter).noteAttempt(),
        barging: false,
        label: options.label,
        place: line.place,
        placeAgeMs: sentAt - line.placedAt,
        handOffAfterMs: options.handOffAfterMs,
        nowMs: wallNow,
      });
      return this.nodes.run(node, call).then((reply) => {
        line.noteReply(node, sentAt, generation, reply);
        return reply;
      });
    };
    return this.nodes.ask(send, timeoutMs, (reply) => reply.acquired);
  }

  /**
   * A queued attempt's outcome: wait until a quorum may be free (or the hand-off-after window ends),
   * renewing the places before they expire.
   */
  private notYet(
    options: EffectiveOptions<RedlockOptions>,
    line: LinePlace,
    ticket: Ticket,
    replies: readonly NodeReply<HandOffAcquireResult>[],
  ): Outcome {
    const { clock } = options;
    const bounds = replies.flatMap((r) =>
      r.outcome === 'value' && !r.value.acquired ? [r.value.waitBoundMs] : [],
    );
    const bound = quorumFreeInMs(bounds, this.nodes.size);
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
    const { quorum } = this.nodes;
    if (have >= quorum) return outcome;
    const timeoutMs = this.nodeTimeoutMs(options.ttlMs);
    return this.nodes.raiseFence(this.keys, fencingToken, grants, have, timeoutMs).then(async (written) => {
      if (written) return outcome;
      await this.nodes.sendTo(this.releaseCall(token), timeoutMs, () => true);
      throw new QuorumError(this.name, 'acquire (fencing token write-back)', quorum, []);
    });
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
   * settles once a quorum answered: a node that is down costs no wait. A node where it failed or got
   * no answer gets it again in the background until a TTL has passed: a leave that never arrived
   * would leave the call in that node's line, to be handed the lock later while nobody waits (its
   * process still listens, so the hand-off is not skipped): held by nobody until its TTL runs out.
   */
  protected sendRelease(token: string): Promise<boolean> {
    const { clock, ttlMs } = this.options;
    const until = clock.now() + ttlMs;
    const waitMs = this.answerWaitMs();
    return this.nodes.answer('release', this.releaseCall(token), waitMs, (node) =>
      this.nodes.resend(node, () => this.releaseCall(token), waitMs, clock, until),
    );
  }

  /** @internal Compare-and-extend on every node: true once a quorum extended, false once none can. */
  protected sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.nodes.answer('extend', handOffExtend(this.keys, { token, ttlMs }), this.nodeTimeoutMs(ttlMs));
  }

  /**
   * @internal A waiting call joins its process's batch (per first client and name) unless it counts
   * its attempts.
   */
  protected override localBatch(
    plan: Plan<RedlockOptions>,
    path: GrantPath,
  ): { batch: LocalBatch; bounds: BatchBounds } | undefined {
    const bounds = batchBounds(plan.options);
    const scope = this.nodes.contexts[0];
    return bounds && scope && { batch: localBatchFor(scope, this.batchKey, this.batchBackend, path), bounds };
  }

  /** @internal */
  protected override existingBatch(): LocalBatch | undefined {
    const scope = this.nodes.contexts[0];
    return scope && existingLocalBatch(scope, this.batchKey);
  }

  /**
   * Its batch's name among its first client's: the lock and every node's client, since a lock over
   * other nodes is another lock (and a Mutex of the same name has its own), and its release policy,
   * since a batch releases through the lock object that made it.
   */
  private get batchKey(): string {
    const nodes = this.nodes.contexts.map((node) => node.clientId).join(' ');
    return `redlock ${this.keys.lock} ${nodes} handOffAfterMs=${this.options.handOffAfterMs}`;
  }

  /**
   * Extends on every node and reserves `count` fencing tokens there: the highest top a quorum of
   * them reserved up to, written back to a quorum when fewer hold it (as an acquisition's token is),
   * so any later quorum starts above it. 0 when no quorum extended or the write-back failed.
   */
  private async reserveFences(token: string, ttlMs: number, count: number): Promise<number> {
    const timeoutMs = this.nodeTimeoutMs(ttlMs);
    const call = handOffReserveFences(this.keys, { token, ttlMs, count });
    const replies = await this.nodes.ask(call, timeoutMs, (top) => top > 0);
    const tops = replies.map((r) => (r.outcome === 'value' && r.value > 0 ? r.value : undefined));
    const reserved = tops.filter((top): top is number => top !== undefined);
    if (reserved.length < this.nodes.quorum) return 0;
    const top = Math.max(...reserved);
    const have = reserved.filter((t) => t === top).length;
    if (have >= this.nodes.quorum) return top;
    const grants = tops.map((t) => (t === undefined ? undefined : { fencingToken: t, sentAt: 0 }));
    return (await this.nodes.raiseFence(this.keys, top, grants, have, timeoutMs)) ? top : 0;
  }

  /** @internal The quorum's view: the owner a quorum agrees on; rejects without a quorum of answers. */
  protected readState(): Promise<RedlockState> {
    return this.nodes.inspect(handOffInspect(this.keys), this.answerWaitMs());
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
