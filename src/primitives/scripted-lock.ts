import { type ClientContext, clientChannel, contextFor } from '../adapters/client-context.js';
import type { RedisClient } from '../adapters/client-types.js';
import { runScript, waitForReplicas } from '../adapters/run-script.js';
import { hubFor } from '../adapters/subscriber-hub.js';
import { boundedCall } from '../bounded-call.js';
import type { AcquireOptions, LockOptions } from '../options.js';
import type { ScriptCall } from '../protocol/call.js';
import { type LockKeys, lockKeys } from '../protocol/keys.js';
import type { LockState } from '../protocol/lock-state.js';
import { checkName } from '../validation.js';
import type { WakeChannel } from '../waiting/wake.js';
import { LockShell } from './lock-shell.js';

/**
 * A lock on one Redis deployment: the shell plus one client's context. It runs typed script calls
 * (src/protocol/) on that client and names the per-client channels waiters hear; the lock kinds
 * never see the client itself.
 */
export abstract class ScriptedLock<
  Options extends LockOptions,
  State extends LockState,
  Call extends AcquireOptions = AcquireOptions,
> extends LockShell<Options, State, Call> {
  // `@internal` members are left out of the published declarations (tsup.config.ts: stripInternal):
  // they name adapter and protocol internals that users never need and must not come to rely on.
  /** @internal The Redis keys of this lock (tests and the fault suite look at them). */
  readonly keys: LockKeys;
  /** @internal */
  protected readonly context: ClientContext;
  /** @internal Where this client's waiters hear their hand-offs (one channel per client and lock). */
  protected readonly grantedChannel: string;

  /** Checks the arguments in their order (name, client, options) before anything reaches Redis. */
  constructor(
    client: RedisClient,
    name: string,
    options: unknown,
    resolveOptions: (options: unknown) => Readonly<Options>,
  ) {
    const checkedName = checkName('name', name);
    const context = contextFor(client);
    super(checkedName, resolveOptions(options));
    this.context = context;
    this.keys = lockKeys(this.options.prefix, name);
    this.grantedChannel = clientChannel(context, this.keys.grantedChannelPrefix);
  }

  /** @internal Runs one typed script call on this lock's client. */
  protected run<Result>(call: ScriptCall<Result>): Promise<Result> {
    return runScript(this.context, call);
  }

  /**
   * @internal WAIT on the connection this lock's scripts went through (on a cluster, the one to the
   * primary of its slot), bounded by its own timeout plus one reply's (`replyTimeoutMs`).
   */
  protected override waitForReplicas(count: number, timeoutMs: number): Promise<number> {
    return boundedCall(
      this.bound,
      'WAIT for replicas',
      waitForReplicas(this.context, this.keys.lock, count, timeoutMs),
      {
        extraMs: timeoutMs,
      },
    );
  }

  /** @internal */
  protected override disconnected(): string | undefined {
    return this.context.driver.disconnectedReason();
  }

  /** @internal Where this client's waiters hear their hand-offs, with the filter of one call. */
  protected wakeChannel(accept: (message: string) => boolean): WakeChannel {
    return { hub: hubFor(this.context), channel: this.grantedChannel, accept };
  }
}
