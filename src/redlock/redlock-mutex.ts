import { setTimeout as delay } from 'node:timers/promises';
import { type ClientContext, contextFor } from '../adapters/client-context.js';
import type { RedisClient } from '../adapters/client-types.js';
import { runScript } from '../adapters/run-script.js';
import { hubFor } from '../adapters/subscriber-hub.js';
import { QuorumError } from '../errors.js';
import { type EffectiveOptions, type RedlockOptions, resolveRedlockOptions } from '../options.js';
import type { AttemptOutcome } from '../primitives/acquisition.js';
import { type AttemptCall, type AttemptHooks, LockShell } from '../primitives/lock-shell.js';
import type { ScriptCall } from '../protocol/call.js';
import { fairAcquire, fairExtend, fairInspect, fairRelease } from '../protocol/fair-mutex.js';
import { raiseFence } from '../protocol/fencing-counter.js';
import { type LockKeys, lockKeys } from '../protocol/keys.js';
import type { LockState } from '../protocol/lock-state.js';
import { checkClientList, checkName } from '../validation.js';
import { fanOut, type NodeReply, nodeOutcome } from './fan-out.js';
import { quorumFreeInMs, quorumSize, splitBackoffMs, tally, verdict } from './quorum.js';

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
 * Each attempt sends the Mutex's own single-try script to every node at once and decides as soon
 * as the outcome is known; it counts only with a quorum and validity left (ttl − elapsed − drift,
 * from before the first send). An attempt that fails gives back what it may have won, at once, on
 * every node that did not answer no (none of it is kept), then waits a random, growing back-off, or until a release is announced on
 * any node. The fencing token is the highest over the quorum, written back to a quorum before the
 * acquisition counts. Waiters do not queue (per-node queues would split the vote between waiters):
 * this lock is not fair, and there is no Redlock FairMutex or Semaphore (README, "Redlock").
 */
export class RedlockMutex extends LockShell<RedlockOptions, RedlockState> {
  /** @internal The Redis keys of this lock, the same on every node. */
  readonly keys: LockKeys;
  /** @internal One context per node, in the order the clients were given. */
  protected readonly nodes: readonly ClientContext[];
  private readonly quorum: number;
  /** Give-backs sent by this instance: numbers their announcements apart. */
  private giveBacks = 0;

  /** Checks the arguments in their order (clients, name, options) before anything reaches Redis. */
  constructor(clients: readonly RedisClient[], name: string, options?: Partial<RedlockOptions>) {
    const list = checkClientList('clients', clients);
    const checkedName = checkName('name', name);
    const nodes = list.map((client) => contextFor(client));
    super(checkedName, resolveRedlockOptions(options));
    this.nodes = nodes;
    this.quorum = quorumSize(nodes.length);
    this.keys = lockKeys(this.options.prefix, checkedName);
  }

  /** @internal */
  protected planAttempts({ token, options }: AttemptCall<RedlockOptions>): AttemptHooks {
    let splitsInARow = 0;
    // Attempts in a row that did not win, and whether a release was heard since the last one.
    let lostInARow = 0;
    let heard = false;
    let lastAttemptMs = 0;
    // A release is announced on every node with the releasing token: the first copy wakes the call,
    // the others would only wake it again for the same release.
    // This call's own give-backs are announced too: hearing them is no news to it.
    let lastRelease: string | undefined;
    const ownGiveBack = `${token}:`;
    const firstCopy = (message: string) => {
      if (message === lastRelease || message.startsWith(ownGiveBack)) return false;
      lastRelease = message;
      heard = true;
      return true;
    };
    const wake = this.nodes.map((node) => ({
      hub: hubFor(node),
      channel: this.keys.releasedChannel,
      accept: firstCopy,
    }));
    return {
      attempt: async () => {
        if (heard) {
          // Every waiter hears a release at once; all trying at once splits the vote and nobody
          // wins. Each waits a random part of a span that doubles with its losses in a row (as
          // after a split vote), so one goes first and the others find it held.
          heard = false;
          const staggerMs = splitBackoffMs({
            attemptMs: lastAttemptMs,
            splitsInARow: Math.min(lostInARow, 3),
            random: Math.random,
          });
          if (staggerMs > 0) await delay(staggerMs);
        }
        const startedAt = options.clock.now();
        const outcome = await this.attempt(token, options, splitsInARow);
        lastAttemptMs = options.clock.now() - startedAt;
        splitsInARow = outcome.split ? splitsInARow + 1 : 0;
        lostInARow = outcome.outcome.acquired ? 0 : lostInARow + 1;
        return outcome.outcome;
      },
      wake,
      // Everyone hears a release and competes again: a wake-up is an attempt like any other.
      wakeUpIsRetry: true,
      // A failed attempt gave back what it won, on every node, before it returned.
      mayHaveLeftState: () => false,
    };
  }

  /**
   * One quorum attempt: the Mutex's single try (no queueing) on every node at once. With a quorum,
   * the fencing token is written back to a quorum first; without, everything won is given back on
   * every node but those that answered no (also those that did not answer: their request may yet
   * take it) before returning.
   */
  private async attempt(
    token: string,
    options: EffectiveOptions<RedlockOptions>,
    splitsInARow: number,
  ): Promise<{ outcome: AttemptOutcome; split: boolean }> {
    const { clock } = options;
    const timeoutMs = this.nodeTimeoutMs(options.ttlMs);
    const sentAt = clock.now();
    const sentAtWall = clock.wallNow?.();
    const call = fairAcquire(this.keys, {
      token,
      ttlMs: options.ttlMs,
      entryTtlMs: 0,
      grantChannel: '',
      maybeQueued: false,
      barging: true,
    });
    const replies = await this.fanOut(call, timeoutMs, (r) => r.acquired);
    const outcomes = replies.map((reply) => nodeOutcome(reply, (r) => r.acquired));
    const counted = tally(outcomes);
    if (verdict(counted, this.nodes.length) === 'won') {
      const fences = replies.flatMap((r) =>
        r.outcome === 'value' && r.value.acquired ? [r.value.fencingToken] : [],
      );
      const fencingToken = Math.max(...fences);
      if (await this.writeBackFence(fencingToken, replies, timeoutMs)) {
        return { outcome: { acquired: true, fencingToken, sentAt, sentAtWall }, split: false };
      }
      await this.giveBackVotes(token, timeoutMs, () => true);
      throw new QuorumError(this.name, 'acquire (fencing token write-back)', this.quorum, outcomes);
    }
    // Every node but those that said no: a node that did not answer (yet) may still take it.
    await this.giveBackVotes(token, timeoutMs, (node) => outcomes[node]?.outcome !== 'held');
    if (counted.held < this.nodes.length - this.quorum + 1) {
      throw new QuorumError(this.name, 'acquire', this.quorum, outcomes);
    }
    if (counted.won > 0) {
      // A split vote: another attempt won the rest. Both gave theirs back; wait apart.
      const attemptMs = clock.now() - sentAt;
      const backoff = splitBackoffMs({ attemptMs, splitsInARow, random: Math.random });
      return { outcome: { acquired: false, holderPttlMs: backoff }, split: true };
    }
    const bounds = replies.flatMap((r) =>
      r.outcome === 'value' && !r.value.acquired ? [r.value.waitBoundMs] : [],
    );
    return {
      outcome: { acquired: false, holderPttlMs: quorumFreeInMs(bounds, this.nodes.length) },
      split: false,
    };
  }

  /**
   * Raises the fencing counter to `fencingToken` on as many nodes as a quorum still needs (the nodes
   * that handed out that very value already hold it); true once a quorum holds at least it. Any
   * later quorum shares a node with that one, so it starts above. Nodes this attempt won come first
   * (they just answered); a node that fails is replaced by the next one, in another wave, so only a
   * fault costs a second round trip.
   */
  private async writeBackFence(
    fencingToken: number,
    replies: readonly NodeReply<{ acquired: boolean; fencingToken?: number }>[],
    timeoutMs: number,
  ): Promise<boolean> {
    const already = (r: (typeof replies)[number]) =>
      r.outcome === 'value' && r.value.fencingToken === fencingToken;
    let have = replies.filter(already).length;
    const rank = (r: (typeof replies)[number]) => (r.outcome === 'value' ? (r.value.acquired ? 0 : 1) : 2);
    const candidates = replies
      .filter((r) => !already(r))
      .sort((a, b) => rank(a) - rank(b))
      .map((r) => r.node);
    const call = raiseFence(this.keys, { atLeast: fencingToken });
    while (have < this.quorum && candidates.length > 0) {
      const wave = candidates.splice(0, this.quorum - have);
      const written = await fanOut(
        wave.length,
        (i) => runScript(this.nodes[wave[i] as number] as ClientContext, call),
        timeoutMs,
      );
      have += written.filter((r) => r.outcome === 'value').length;
    }
    return have >= this.quorum;
  }

  /**
   * Gives an attempt's partial votes back on the nodes `mayHold` names, and waits for their answers
   * (within the per-node timeout). A node this frees announces it on `…:released`, as a release
   * does: a waiter that found the quorum held by partial votes has no holder's release to wait
   * for, and would otherwise sit out `retryDelayMs`. The message names this give-back (token and a
   * count), so a waiter's filter of copies of one release does not take it for an earlier one.
   */
  private async giveBackVotes(
    token: string,
    timeoutMs: number,
    mayHold: (node: number) => boolean,
  ): Promise<void> {
    this.giveBacks += 1;
    const call = fairRelease(this.keys, {
      token,
      skipUnreached: true,
      releasedChannel: this.keys.releasedChannel,
      announce: `${token}:${this.giveBacks}`,
    });
    await fanOut(
      this.nodes.length,
      (node) => (mayHold(node) ? runScript(this.nodes[node] as ClientContext, call) : Promise.resolve(false)),
      timeoutMs,
    );
  }

  /**
   * @internal Releases on every node and announces it there (waiters listen on all of them). True
   * when a quorum released it; false when so many nodes did not hold it that no quorum did. It is
   * sent to every node, but settles once a quorum answered: a node that is down costs no wait.
   */
  protected async sendRelease(token: string): Promise<boolean> {
    const call = fairRelease(this.keys, {
      token,
      skipUnreached: true,
      releasedChannel: this.keys.releasedChannel,
    });
    return this.quorumAnswer('release', call, this.answerWaitMs(), true);
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
  ): Promise<boolean> {
    const nodes = this.nodes.length;
    const outcomesOf = (replies: readonly NodeReply<boolean>[]) =>
      replies.map((r) => nodeOutcome(r, (yes) => yes));
    const replies = await this.fanOut(call, timeoutMs, (yes) => yes, early);
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
  private fanOut<Result>(
    call: ScriptCall<Result>,
    timeoutMs: number,
    yes: (result: Result) => boolean,
    early = true,
  ): Promise<NodeReply<Result>[]> {
    const nodes = this.nodes.length;
    return fanOut(
      nodes,
      (node) => runScript(this.nodes[node] as ClientContext, call),
      timeoutMs,
      early ? (known) => verdict(tally(known.map((r) => nodeOutcome(r, yes))), nodes) !== 'open' : undefined,
    );
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
