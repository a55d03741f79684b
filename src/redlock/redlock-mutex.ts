import { clientChannel } from '../adapters/client-context.js';
import type { RedisClient } from '../adapters/client-types.js';
import { batchBounds } from '../batching/batch-options.js';
import {
  type BatchBackend,
  type BatchBounds,
  existingLocalBatch,
  type LocalBatch,
  localBatchFor,
} from '../batching/local-batch.js';
import type { GrantPath, Plan } from '../plan.js';
import { LockShell } from '../primitives/lock-shell.js';
import type { ScriptCall } from '../protocol/call.js';
import { handOffExtend, handOffInspect, handOffReserveFences } from '../protocol/hand-off.js';
import { type LockKeys, lockKeys } from '../protocol/keys.js';
import { redlockAcquire, redlockRelease } from '../protocol/redlock.js';
import { checkClientList, checkName } from '../validation.js';
import type { Attempts } from '../waiting/attempts.js';
import { callStamp, LongCallTtls, releaseTombstone } from './call-stamp.js';
import { answerWaitFor, nodeTimeoutFor, type QuorumKind, quorumAttempts } from './quorum-acquire.js';
import { nodeContexts, QuorumNodes, type RedlockState } from './quorum-nodes.js';
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
 * counts. First come, first served; its waiting (quorum-acquire.ts) is the RedlockSemaphore's too.
 */
export class RedlockMutex extends LockShell<RedlockOptions, RedlockState> {
  /** @internal The Redis keys of this lock, the same on every node. */
  readonly keys: LockKeys;
  /** @internal The servers, and how this lock asks them. */
  protected readonly nodes: QuorumNodes;
  /** What the quorum's waiting sends to each node. */
  private readonly quorumKind: QuorumKind;
  /** Calls whose TTL outlasts the default and a minute: their releases' tombstones last as long. */
  private readonly longCalls = new LongCallTtls();

  /** What this process's batch of the lock calls back into. */
  private readonly batchBackend: BatchBackend = {
    ...this.backend,
    reserveFences: (token, ttlMs, count) => this.reserveFences(token, ttlMs, count),
  };

  /** Checks the arguments in their order (clients, name, options) before anything reaches Redis. */
  constructor(clients: readonly RedisClient[], name: string, options?: Partial<RedlockOptions>) {
    const list = checkClientList('clients', clients);
    const checkedName = checkName('name', name);
    const contexts = nodeContexts('RedlockMutex', list, 'Mutex');
    super(checkedName, resolveRedlockOptions(options));
    this.nodes = new QuorumNodes(checkedName, contexts);
    this.keys = lockKeys(this.options.prefix, checkedName);
    this.quorumKind = this.quorumKindOf(
      contexts.map((node) => clientChannel(node, this.keys.grantedChannelPrefix)),
    );
  }

  /** @internal */
  protected planAttempts(plan: Plan<RedlockOptions>): Attempts {
    return quorumAttempts(this.nodes, this.quorumKind, plan);
  }

  /** What the quorum's waiting sends to each node: the line's scripts (redlock-*.lua). */
  private quorumKindOf(grantChannels: readonly string[]): QuorumKind {
    const { handOffAfterMs } = this.options;
    return {
      name: this.name,
      fenceKeys: this.keys,
      grantChannels,
      handOffAfterMs,
      releaseCall: (token, ttlMs) => this.releaseCall(token, ttlMs),
      acquire: (node, request) => {
        this.longCalls.note(request.token, request.ttlMs, this.options.ttlMs);
        const call = redlockAcquire(this.keys, {
          token: request.token,
          ttlMs: request.ttlMs,
          ...request.entry,
          maybeQueued: request.maybeQueued,
          barging: false,
          label: request.label,
          place: request.line.place,
          placeAgeMs: request.sentAt - request.line.placedAt,
          handOffAfterMs,
          nowMs: request.wallNow,
          // Taken as it goes out (after the token's earlier calls to that node: QuorumNodes.inOrder).
          stamp: callStamp(),
        });
        return this.nodes.run(node, call, request.latest);
      },
    };
  }

  /**
   * A release of `token`, made per node as it goes out there (QuorumNodes.releaseOn), with one
   * wall-clock reading for every node. It leaves the token's tombstone there, its stamp kept
   * `keepMs`, a minute at least (`releaseTombstone`): an attempt of the token sent to that node before this release that reaches it after
   * it takes nothing there (issue 39; see RedlockSemaphore's `releaseCall`).
   */
  private releaseCall(token: string, keepMs: number): () => ScriptCall<boolean> {
    const nowMs = this.options.clock.wallNow?.() ?? Date.now();
    return () =>
      redlockRelease(this.keys, {
        token,
        skipUnreached: true,
        handOffAfterMs: this.options.handOffAfterMs,
        nowMs,
        // Taken as it goes out to the node (after the token's earlier calls there).
        tombstone: releaseTombstone(keepMs),
      });
  }

  /**
   * @internal Releases on every node, each handing the lock to the first live waiter of its line
   * (the same waiter everywhere), or takes `token` out of the lines (QuorumNodes.releaseEverywhere).
   */
  protected sendRelease(token: string): Promise<boolean> {
    const { clock, ttlMs } = this.options;
    return this.nodes.releaseEverywhere(
      token,
      () => this.releaseCall(token, this.longCalls.of(token, ttlMs)),
      this.answerWaitMs(),
      clock,
      ttlMs,
    );
  }

  /** @internal Compare-and-extend on every node: true once a quorum extended, false once none can. */
  protected sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.nodes.extendEverywhere(
      token,
      handOffExtend(this.keys, { token, ttlMs }),
      this.nodeTimeoutMs(ttlMs),
      this.answerWaitMs(),
    );
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
    if (!bounds || !scope) return undefined;
    const batch = localBatchFor(scope, this.batchKey, this.batchBackend, path, this.keptBatch);
    this.keptBatch = batch;
    return { batch, bounds };
  }

  /** The batch this lock object's calls joined last, kept while idle (see `localBatchFor`). */
  private keptBatch: LocalBatch | undefined;

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
    return (await this.nodes.claimFence(this.keys, top, grants, have, timeoutMs, true)) ?? 0;
  }

  /** @internal The quorum's view: the owner a quorum agrees on; rejects without a quorum of answers. */
  protected readState(): Promise<RedlockState> {
    return this.nodes.inspect(handOffInspect(this.keys), this.answerWaitMs());
  }

  /** How long a release or an inspection waits for a node's answer (answerWaitFor). */
  private answerWaitMs(): number {
    return answerWaitFor(this.options.nodeTimeoutMs, this.options.ttlMs);
  }

  /** The per-node timeout for a TTL (nodeTimeoutFor). */
  private nodeTimeoutMs(ttlMs: number): number {
    return nodeTimeoutFor(this.options.nodeTimeoutMs, ttlMs);
  }
}
