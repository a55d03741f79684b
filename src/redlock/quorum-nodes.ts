import { type ClientContext, contextFor } from '../adapters/client-context.js';
import { runScript } from '../adapters/run-script.js';
import { Backoff } from '../backoff.js';
import type { Clock } from '../clock.js';
import { QuorumError, UnsupportedClientError } from '../errors.js';
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
/** How many values an acquisition's fencing claim tries before the grant is given back. */
const CLAIM_ROUNDS = 3;

/**
 * Resolves once `earlier` settled (it never rejects: `inOrder` keeps a settled-only promise), or
 * after `waitMs`, whichever comes first.
 */
function settledWithin(earlier: Promise<void>, waitMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, waitMs));
    timer.unref();
  });
  return Promise.race([earlier, bound]).finally(() => clearTimeout(timer));
}

/** `token`'s per-node map in `byToken`, made when it has none. */
function nodesOf<Value>(byToken: Map<string, Map<number, Value>>, token: string): Map<number, Value> {
  let nodes = byToken.get(token);
  if (!nodes) {
    nodes = new Map();
    byToken.set(token, nodes);
  }
  return nodes;
}

/** Removes `node` from `nodes` (`token`'s map in `byToken`), and that map once it is empty. */
function forgetNode<Value>(
  byToken: Map<string, Map<number, Value>>,
  token: string,
  nodes: Map<number, Value>,
  node: number,
): void {
  nodes.delete(node);
  if (nodes.size === 0 && byToken.get(token) === nodes) byToken.delete(token);
}

/**
 * The nodes a quorum's token is written back to, in order: those that granted a lower one (they
 * just answered), then those that granted nothing.
 */
function writeBackOrder(grants: readonly (NodeGrant | undefined)[], fencingToken: number): number[] {
  const nodes = grants.map((grant, node) => ({ grant, node }));
  return [
    ...nodes.filter(({ grant }) => grant && grant.fencingToken !== fencingToken),
    ...nodes.filter(({ grant }) => !grant),
  ].map(({ node }) => node);
}

/** A RedlockMutex's state: the quorum's view, and each node's own (undefined: it did not answer). */
export interface RedlockState extends LockState {
  readonly nodes: readonly (LockState | undefined)[];
}

/**
 * One context per client of a Redlock kind (`kind` names it in the refusal). A cluster client is
 * refused: Redlock's servers are independent Redis servers, each a node of the quorum; one Redis
 * Cluster is one deployment, for a single-deployment kind.
 */
export function nodeContexts(kind: string, clients: readonly unknown[], instead: string): ClientContext[] {
  const contexts = clients.map((client) => contextFor(client));
  if (contexts.some((node) => node.topology === 'cluster')) {
    throw new UnsupportedClientError(
      `a cluster client (an ioredis Cluster or a node-redis createCluster()) as a ${kind} node. ` +
        `Pass one client per independent Redis server, or use a ${instead} on the cluster client`,
    );
  }
  return contexts;
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
  /** Per token: its releases being re-sent in the background (`resend`), until `stopResends`. */
  private readonly resends = new Map<string, Set<{ stopped: boolean }>>();
  /** Per token, per node: once its latest call there (`inOrder`) has settled. */
  private readonly sequences = new Map<string, Map<number, Promise<void>>>();
  /**
   * Per token, per node: its calls sent there (`inOrder`) that have not settled yet, each marked
   * `overtaken` once a later one went out (then its NOSCRIPT answer is not sent again as EVAL).
   */
  private readonly unsettled = new Map<string, Map<number, Set<{ overtaken: boolean }>>>();

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

  /**
   * One typed call on one node; `resendAsEval` (see evalScript) says, once it is answered
   * NOSCRIPT, whether its EVAL may still go out (`inOrder`'s `latest`).
   */
  run<Result>(node: number, call: ScriptCall<Result>, resendAsEval?: () => boolean): Promise<Result> {
    return runScript(this.contexts[node] as ClientContext, call, resendAsEval);
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
    call: ScriptCall<boolean> | ((node: number) => Promise<boolean>),
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

  /**
   * Sends `call()` (a release or a leave of `token`) to the nodes `which` names, each in order with
   * the token's other calls there (`inOrder`, waiting for them at most `orderWaitMs`), and waits
   * for their answers (within `timeoutMs`). `call()` is made per node as it goes out (`releaseOn`).
   */
  async giveBack(
    token: string,
    call: () => ScriptCall<boolean>,
    timeoutMs: number,
    orderWaitMs: number,
    which: (node: number) => boolean,
  ): Promise<void> {
    const send = (node: number) =>
      which(node) ? this.releaseOn(token, node, call, orderWaitMs) : Promise.resolve(false);
    await this.ask(send, timeoutMs);
  }

  /**
   * Sends `send()` (one call of `token`'s acquire call or lease to `node`: an attempt, a release)
   * once every earlier one of `token` to `node` has settled, or `waitMs` after it was made if one
   * has not by then; at once when none is pending. The node's connection keeps the order of what
   * is on the wire, but not of what is not there yet: a call answered NOSCRIPT is sent again as
   * EVAL only after that answer, behind whatever was sent meanwhile (a give-back that settled
   * without that node's answer, then the call's next attempt, whose script is loaded there, went
   * first: the give-back then deleted the grant the attempt took, while the lease counted that
   * node in its quorum; and the other way round, an attempt answered NOSCRIPT went after its own
   * give-back, leaving a grant held by nobody). The wait is bounded: an earlier call that never
   * settles (a connection that hangs, a client without a timeout) or settles only once a node
   * that is down is back must not hold a release back for good (the node kept the grant until its
   * TTL). Sent past the bound, the call goes out behind the earlier one on the node's connection
   * (or its client's offline queue), in order; but an earlier call answered NOSCRIPT after that
   * would send its EVAL behind it: `send` is given `latest` (true while no later call of `token`
   * went out to `node`), which every script call it makes passes on as `resendAsEval`, so such an
   * EVAL is not sent and that call fails there, none of it run (an attempt's EVAL ran after the
   * release of its lease, which found nothing there: a permit or a lock held by nobody until its
   * TTL, the fault suite's key-left-behind).
   */
  inOrder<Result>(
    token: string,
    node: number,
    waitMs: number,
    send: (latest: () => boolean) => Promise<Result>,
  ): Promise<Result> {
    const nodes = nodesOf(this.sequences, token);
    const before = nodes.get(node);
    const go = () => this.sendLatest(token, node, send);
    const sent = before ? settledWithin(before, waitMs).then(go) : go();
    const settled = sent.then(
      () => {},
      () => {},
    );
    nodes.set(node, settled);
    void settled.then(() => {
      if (nodes.get(node) === settled) forgetNode(this.sequences, token, nodes, node);
    });
    return sent;
  }

  /**
   * Sends `send(latest)` now (`inOrder`'s send): every call of `token` to `node` still unsettled is
   * overtaken by it, and `latest` says whether a later one has overtaken it in turn.
   */
  private sendLatest<Result>(
    token: string,
    node: number,
    send: (latest: () => boolean) => Promise<Result>,
  ): Promise<Result> {
    const nodes = nodesOf(this.unsettled, token);
    const calls = nodes.get(node) ?? new Set();
    nodes.set(node, calls);
    for (const earlier of calls) earlier.overtaken = true;
    const mine = { overtaken: false };
    calls.add(mine);
    const settled = () => {
      calls.delete(mine);
      if (calls.size === 0 && nodes.get(node) === calls) forgetNode(this.unsettled, token, nodes, node);
    };
    let sent: Promise<Result>;
    try {
      sent = send(() => !mine.overtaken);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(settled, settled);
    return sent;
  }

  /**
   * One release (or leave) of `token` on `node`, in order with the token's other calls there
   * (waiting for them at most `waitMs`). `call()` is made as it goes out, after those calls: its
   * stamp (redlock/call-stamp.ts) is then above that of every attempt of the token sent to `node`
   * before it, also of one that waited there behind a hung call (issue 39).
   */
  private releaseOn(
    token: string,
    node: number,
    call: () => ScriptCall<boolean>,
    waitMs: number,
  ): Promise<boolean> {
    return this.inOrder(token, node, waitMs, (latest) => this.run(node, call(), latest));
  }

  /**
   * A release (or a leave) of `token` on every node: true when a quorum released it; false when so
   * many nodes did not hold it that no quorum did. It is sent to every node, but settles once a
   * quorum answered: a node that is down costs no wait. A node where it failed or got no answer
   * gets it again in the background for `ttlMs` (`resend`): a leave that never arrived would leave
   * the call in that node's line or queue, to be handed the lock later while nobody waits (its
   * process still listens, so the hand-off is not skipped): held by nobody until its TTL runs out.
   * `release()` makes one round of it (one per send to every node, one per re-send): a maker of
   * the node's call, made as that call goes out (`releaseOn`).
   */
  releaseEverywhere(
    token: string,
    release: () => () => ScriptCall<boolean>,
    waitMs: number,
    clock: Clock,
    ttlMs: number,
  ): Promise<boolean> {
    const until = clock.now() + ttlMs;
    const first = release();
    return this.answer(
      'release',
      (node) => this.releaseOn(token, node, first, waitMs),
      waitMs,
      (node) => this.resend(node, token, release, waitMs, clock, until),
    );
  }

  /**
   * A compare-and-extend of `token` on every node, each in order with the token's other calls there
   * (`inOrder`, waiting for them at most `orderWaitMs`: never ahead of a give-back of it still on
   * its way, which would delete what this extended): true with a quorum of yes, as `answer`.
   */
  extendEverywhere(
    token: string,
    call: ScriptCall<boolean>,
    timeoutMs: number,
    orderWaitMs: number,
  ): Promise<boolean> {
    return this.answer(
      'extend',
      (node) => this.inOrder(token, node, orderWaitMs, (latest) => this.run(node, call, latest)),
      timeoutMs,
    );
  }

  /**
   * The acquire call of `token` is about to send an attempt: every release of `token` still being
   * re-sent in the background stops. Such a release is a give-back of that same call (the waiting
   * loop gives back a grant that came too late to use, then attempts again with the same token);
   * re-sent after this attempt, it would land behind it on the node and delete the grant the
   * attempt takes there, while the lease counts that node in its quorum. The attempt itself brings
   * the node up to date, and the call's own give-back, if it ends without a lease, is sent anew.
   */
  stopResends(token: string): void {
    const resends = this.resends.get(token);
    if (!resends) return;
    this.resends.delete(token);
    for (const resend of resends) resend.stopped = true;
  }

  /**
   * Sends `release()` (a release or a leave of `token`) again to `node`, in the background, until the
   * node answers, `clock` passes `until`, or `token` attempts again (`stopResends`): a release or a
   * leave that never arrived would leave the token in that node's line.
   */
  private resend(
    node: number,
    token: string,
    release: () => () => ScriptCall<boolean>,
    timeoutMs: number,
    clock: Clock,
    until: number,
  ): void {
    const backoff = new Backoff({ firstMs: RESEND_FIRST_MS, maxMs: RESEND_MAX_MS });
    const resend = { stopped: false };
    const resends = this.resends.get(token) ?? new Set();
    resends.add(resend);
    this.resends.set(token, resends);
    const retry = async (): Promise<void> => {
      while (clock.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, backoff.next()).unref());
        // Checked in the same turn as the send: stopped by an attempt, or sent before it (and then
        // ahead of it on the node's connection).
        if (resend.stopped) return;
        const [reply] = await fanOut(1, () => this.releaseOn(token, node, release(), timeoutMs), timeoutMs);
        if (reply?.outcome === 'value') return;
      }
    };
    void retry().finally(() => {
      resends.delete(resend);
      if (resends.size === 0 && this.resends.get(token) === resends) this.resends.delete(token);
    });
  }

  /**
   * Claims `fencingToken` (the highest of a quorum's grants) on a quorum: a node takes it when it
   * handed out that very value to this call (`have` of them) or when its counter was below it and
   * is raised to it; a node whose counter already reached it does not count, as it may have handed
   * that value to another holder or taken another quorum's claim of it. Two claims of one value
   * would need a quorum each, and any two quorums share a node, so a token claimed is this call's
   * alone; any later quorum shares a node with this one, so it starts above. Refused by a quorum's
   * answers (holders granted at once by other quorums), it claims a fresh value above every counter
   * seen, on every node, up to `CLAIM_ROUNDS` times. Resolves with the token claimed, 0 when still
   * refused, undefined when no quorum answered. With `raiseOnly` (a holder no one else holds with
   * at once: a RedlockMutex's batch reserving tokens) every node that answers counts, and it
   * resolves with `fencingToken` or undefined.
   */
  async claimFence(
    keys: Pick<LockKeys, 'fence' | 'lock'>,
    fencingToken: number,
    grants: readonly (NodeGrant | undefined)[],
    have: number,
    timeoutMs: number,
    raiseOnly = false,
  ): Promise<number | undefined> {
    let token = fencingToken;
    let order = writeBackOrder(grants, token);
    let taken = have;
    for (let round = 0; round < CLAIM_ROUNDS; round += 1) {
      const call = raiseFence(keys, { atLeast: token });
      const claim = await this.spread(call, order, taken, timeoutMs, (reply) => raiseOnly || reply.raised);
      if (claim.taken >= this.quorum) return token;
      if (raiseOnly || taken + claim.answers.length < this.quorum) return undefined;
      token = Math.max(token, ...claim.answers.map((reply) => reply.counter)) + 1;
      order = this.contexts.map((_, node) => node);
      taken = 0;
    }
    return 0;
  }

  /**
   * Sends `call` to the `order`ed nodes, as many at once as a quorum still needs after `taken`, until
   * a quorum took it (`took` says whether a node's answer counts); a node that fails or refuses is
   * replaced by the next one, in another wave, so only a fault or a refusal costs a round trip.
   */
  private async spread<T>(
    call: ScriptCall<T>,
    order: readonly number[],
    taken: number,
    timeoutMs: number,
    took: (reply: T) => boolean,
  ): Promise<{ taken: number; answers: T[] }> {
    const candidates = [...order];
    const answers: T[] = [];
    let count = taken;
    while (count < this.quorum && candidates.length > 0) {
      const wave = candidates.splice(0, this.quorum - count);
      const replies = await fanOut(wave.length, (i) => this.run(wave[i] as number, call), timeoutMs);
      for (const reply of replies) {
        if (reply.outcome !== 'value') continue;
        answers.push(reply.value);
        if (took(reply.value)) count += 1;
      }
    }
    return { taken: count, answers };
  }

  /**
   * Each node's answer to a read-only `call` (undefined where a node did not answer); rejects with
   * a `QuorumError` without a quorum of answers.
   */
  async states<State>(call: ScriptCall<State>, timeoutMs: number): Promise<(State | undefined)[]> {
    const replies = await this.ask(call, timeoutMs);
    const answered = replies.filter((r) => r.outcome === 'value').length;
    if (answered < this.quorum) {
      const outcomes = replies.map((r) => nodeOutcome(r, () => true));
      throw new QuorumError(this.lockName, 'inspect', this.quorum, outcomes);
    }
    return replies.map((r) => (r.outcome === 'value' ? r.value : undefined));
  }

  /** The quorum's view: the owner a quorum agrees on; rejects without a quorum of answers. */
  async inspect(call: ScriptCall<LockState>, timeoutMs: number): Promise<RedlockState> {
    const states = await this.states(call, timeoutMs);
    const nodes = states.map((state): LockState | undefined => {
      if (!state) return undefined;
      const { locked, ownerToken, remainingTtlMs, lastFencingToken, holderLabel } = state;
      return { locked, ownerToken, remainingTtlMs, lastFencingToken, holderLabel };
    });
    const answered = nodes.filter((n): n is LockState => n !== undefined);
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
