import { clientChannel } from '../adapters/client-context.js';
import type { RedisClient } from '../adapters/client-types.js';
import { PermitsOverLimitError } from '../errors.js';
import type { CallOptionTable } from '../options.js';
import type { Plan } from '../plan.js';
import { LockShell } from '../primitives/lock-shell.js';
import type { SemaphoreAcquireOptions } from '../primitives/semaphore.js';
import type { ScriptCall } from '../protocol/call.js';
import type { HandOffAcquireResult } from '../protocol/hand-off.js';
import { type LockKeys, lockKeys, semaphoreKeys } from '../protocol/keys.js';
import {
  QUORUM_FENCE_STEP_US,
  type SemaphoreScriptKeys,
  semaphoreAcquire,
  semaphoreExtend,
  semaphoreInspect,
  semaphoreRelease,
} from '../protocol/semaphore.js';
import { checkClientList, checkName, checkPermits } from '../validation.js';
import type { Attempts } from '../waiting/attempts.js';
import { callStamp, LongCallTtls, releaseTombstone } from './call-stamp.js';
import { grantsKeepLimit } from './quorum.js';
import { answerWaitFor, nodeTimeoutFor, type QuorumKind, quorumAttempts } from './quorum-acquire.js';
import { permitsSeen, quorumHolders, type RedlockSemaphoreState } from './quorum-holders.js';
import { nodeContexts, QuorumNodes } from './quorum-nodes.js';
import {
  type RedlockSemaphoreOptions,
  redlockSemaphoreCallOptions,
  resolveRedlockSemaphoreOptions,
} from './redlock-semaphore-options.js';

export type { RedlockSemaphoreState } from './quorum-holders.js';

/**
 * A counting semaphore over N independent Redis servers: at most `limit` permits are held at once,
 * as a quorum (⌊N/2⌋+1) of the servers counts them, so it survives the loss of a minority of
 * servers.
 *
 * ```ts
 * const uploads = new RedlockSemaphore([redisA, redisB, redisC], 'uploads', { limit: 3 });
 * await using lease = await uploads.acquire();
 * ```
 *
 * It is the Semaphore's scripts on every server (semaphore-*.lua: holders in a sorted set, a queue
 * in the order of the calls' places as a RedlockMutex's line, so every server hands permits to the
 * same waiter, permits handed straight to the waiters at its head with one message each) under the
 * RedlockMutex's quorum waiting (quorum-acquire.ts): an acquisition holds once a quorum of servers
 * granted it, by a reply or a hand-off heard; its validity counts from before the first send (or
 * from the quorum's hand-off) less the drift; its fencing token is the highest of the quorum's,
 * written back to a quorum when it is not there yet (rarely: the servers' counters step by whole
 * seconds, `QUORUM_FENCE_STEP_US`, so they hand one call the same token while they saw the same
 * grants). Any two quorums share a server, and no server
 * grants more than `limit` permits, so at most `limit` are held through a quorum at once. A
 * minority held for longer than a node may take to answer (the servers' queues disagree on who is
 * next) is given back everywhere and the call queues again. Releases and extensions go to every
 * server. No `setLimit`: a limit stored on one server is not a quorum's.
 */
export class RedlockSemaphore extends LockShell<
  RedlockSemaphoreOptions,
  RedlockSemaphoreState,
  SemaphoreAcquireOptions
> {
  /** @internal The Redis keys of this semaphore (the Semaphore's), the same on every node. */
  readonly keys: LockKeys & SemaphoreScriptKeys;
  /** @internal The servers, and how this semaphore asks them. */
  protected readonly nodes: QuorumNodes;
  /** Per node: the channel this client's waiters hear that node's hand-offs on. */
  private readonly grantChannels: readonly string[];
  /** Calls whose TTL outlasts the default and a minute: their releases' tombstones last as long. */
  private readonly longCalls = new LongCallTtls();

  /** Checks the arguments in their order (clients, name, options) before anything reaches Redis. */
  constructor(
    clients: readonly RedisClient[],
    name: string,
    options: Partial<RedlockSemaphoreOptions> & Pick<RedlockSemaphoreOptions, 'limit'>,
  ) {
    const list = checkClientList('clients', clients);
    const checkedName = checkName('name', name);
    const contexts = nodeContexts('RedlockSemaphore', list, 'Semaphore');
    super(checkedName, resolveRedlockSemaphoreOptions(options));
    this.nodes = new QuorumNodes(checkedName, contexts);
    const keys = lockKeys(this.options.prefix, checkedName);
    this.keys = Object.freeze({ ...keys, ...semaphoreKeys(keys) });
    this.grantChannels = contexts.map((node) => clientChannel(node, keys.grantedChannelPrefix));
  }

  /** @internal */
  protected override callOptions(): CallOptionTable {
    return redlockSemaphoreCallOptions;
  }

  /**
   * @internal The quorum's waiting over the Semaphore's enqueue-or-acquire. A server that refuses
   * the request as over its limit (one stored there by a Semaphore's `setLimit`) ends the call with
   * a `PermitsOverLimitError` once the attempt is given back.
   */
  protected planAttempts(plan: Plan<RedlockSemaphoreOptions>): Attempts {
    const { limit, permits } = plan.options;
    checkPermits('permits', permits, limit);
    let refusedAt: number | undefined;
    const kind: QuorumKind = {
      name: this.name,
      fenceKeys: this.keys,
      grantChannels: this.grantChannels,
      handOffAfterMs: 0,
      releaseCall: (token, ttlMs) => this.releaseCall(token, ttlMs),
      // No read where the servers' limits alone keep the quorum's (limit 1 on 3 servers).
      confirm: grantsKeepLimit(limit, this.nodes.size, this.nodes.quorum)
        ? undefined
        : (_token, timeoutMs) => this.withinLimit(timeoutMs),
      acquire: async (node, request): Promise<HandOffAcquireResult> => {
        this.longCalls.note(request.token, request.ttlMs, this.options.ttlMs);
        const call = semaphoreAcquire(this.keys, {
          token: request.token,
          ttlMs: request.ttlMs,
          permits,
          limit,
          label: request.label,
          // Taken as it goes out (after the token's earlier calls to that node: QuorumNodes.inOrder).
          stamp: callStamp(),
          fenceStepUs: QUORUM_FENCE_STEP_US,
          line: { place: request.line.place, placeAgeMs: request.sentAt - request.line.placedAt },
          capStoredLimit: true,
          ...request.entry,
        });
        const result = await this.nodes.run(node, call, request.latest);
        if (!('overLimit' in result)) return result;
        refusedAt = result.overLimit;
        return { acquired: false, waitBoundMs: -1, serverTimeMs: result.serverTimeMs };
      },
    };
    const attempts = quorumAttempts(this.nodes, kind, plan);
    return {
      ...attempts,
      attempt: async () => {
        const outcome = await attempts.attempt();
        if (refusedAt !== undefined) throw new PermitsOverLimitError(this.name, permits, refusedAt);
        return outcome;
      },
    };
  }

  /**
   * Whether the permits held, as every node that answers now counts them, are within the limit
   * (`permitsSeen`): read after this call's grants are in place on a quorum, so of any callers
   * granted at once beyond the limit, the last one sees them all and gives its grant back.
   */
  private async withinLimit(timeoutMs: number): Promise<boolean> {
    const { limit } = this.options;
    const states = await this.nodes.ask(semaphoreInspect(this.keys, { limit }), timeoutMs);
    const answers = states.map((r) => (r.outcome === 'value' ? r.value : undefined));
    const held = permitsSeen(answers, this.nodes.quorum);
    // A stored limit lowers the option, never raises it (the scripts' capStoredLimit).
    const inForce = Math.min(limit, ...answers.flatMap((state) => (state ? [state.limit] : [])));
    return held !== undefined && held <= inForce;
  }

  /**
   * A release of `token` (the Semaphore's: hands the permits to each node's queue), made per node
   * as it goes out there (QuorumNodes.releaseOn), after the token's earlier calls to that node. It
   * leaves the token's tombstone there, its stamp kept `keepMs`, a minute at least
   * (`releaseTombstone`): since stamps are taken as calls go
   * out, an attempt of the token sent to that node before this release has a lower stamp, and if
   * it reaches the node after it (a client may re-send calls after a reset connection in another
   * order than it was given them, issue 39) it takes nothing there; the token's attempts sent after
   * this release (the same acquire call attempting again after a give-back) take as usual.
   */
  private releaseCall(token: string, keepMs: number): () => ScriptCall<boolean> {
    return () =>
      semaphoreRelease(this.keys, {
        token,
        limit: this.options.limit,
        tombstone: releaseTombstone(keepMs),
        fenceStepUs: QUORUM_FENCE_STEP_US,
        capStoredLimit: true,
      });
  }

  /**
   * @internal Gives the permits back on every node, each handing them to the waiters at the head
   * of its queue, or takes `token` out of the queues (QuorumNodes.releaseEverywhere).
   */
  protected sendRelease(token: string): Promise<boolean> {
    const { clock, ttlMs, nodeTimeoutMs } = this.options;
    const waitMs = answerWaitFor(nodeTimeoutMs, ttlMs);
    const release = () => this.releaseCall(token, this.longCalls.of(token, ttlMs));
    return this.nodes.releaseEverywhere(token, release, waitMs, clock, ttlMs);
  }

  /** @internal Compare-and-extend on every node: true once a quorum extended, false once none can. */
  protected sendExtend(token: string, ttlMs: number): Promise<boolean> {
    const { nodeTimeoutMs } = this.options;
    const timeoutMs = nodeTimeoutFor(nodeTimeoutMs, ttlMs);
    const orderWaitMs = answerWaitFor(nodeTimeoutMs, this.options.ttlMs);
    return this.nodes.extendEverywhere(
      token,
      semaphoreExtend(this.keys, { token, ttlMs }),
      timeoutMs,
      orderWaitMs,
    );
  }

  /** @internal The quorum's view: the holders a quorum agrees on; rejects without a quorum of answers. */
  protected async readState(): Promise<RedlockSemaphoreState> {
    const { limit, nodeTimeoutMs, ttlMs } = this.options;
    const call = semaphoreInspect(this.keys, { limit });
    const states = await this.nodes.states(call, answerWaitFor(nodeTimeoutMs, ttlMs));
    return quorumHolders(states, this.nodes.quorum);
  }

  /** @internal A token holds permits when a quorum holds it (not only the first holder). */
  protected override async holds(token: string): Promise<boolean> {
    return (await this.readState()).holders.some((holder) => holder.token === token);
  }
}
