import type { EffectiveOptions, LockOptions } from '../options.js';
import type { GrantPath, Plan } from '../plan.js';
import { batchBounds, type LocalBatchOptions } from './batch-options.js';
import {
  type BatchBackend,
  type BatchBounds,
  existingLocalBatch,
  type LocalBatch,
  localBatchFor,
} from './local-batch.js';

/** The batch a call joins, and for how long it may pass the lock on. */
export interface Joined {
  readonly batch: LocalBatch;
  readonly bounds: BatchBounds;
}

/**
 * How one lock object's calls join their process's batch (the Mutex's and the Semaphore's
 * `localBatch` hooks): the batch of `key` among its client's (`scope`), kept while idle so one
 * object cycling alone reuses one batch, and the bounds of a call's options, worked out once for
 * the lock's own options object (a call without overrides) rather than per call.
 */
export class BatchJoin<Options extends LockOptions & LocalBatchOptions> {
  /** The batch this lock object's calls joined last, kept while idle (see `localBatchFor`). */
  private kept: LocalBatch | undefined;
  /** The answer `join` gave last, and to which call options. */
  private joined: (Joined & { readonly options: object }) | undefined;

  constructor(
    /** The client's context: batches are per client. */
    private readonly scope: object,
    /**
     * The batch's name among its client's: the lock and whatever of its options changes how the
     * batch releases in Redis (it releases through the lock object that made it).
     */
    private readonly key: string,
    private readonly backend: BatchBackend,
    /** A call's bounds, or undefined when it deals with Redis alone. */
    private readonly boundsOf: (options: EffectiveOptions<Options>) => BatchBounds | undefined = batchBounds,
  ) {}

  /** The batch `plan`'s call joins (one it makes asks Redis by `path`), or undefined: it goes alone. */
  join(plan: Plan<Options>, path: GrantPath): Joined | undefined {
    const last = this.joined;
    const sameOptions = last !== undefined && last.options === plan.options;
    const bounds = sameOptions ? last.bounds : this.boundsOf(plan.options);
    if (!bounds) return undefined;
    const batch = localBatchFor(this.scope, this.key, this.backend, path, this.kept);
    this.kept = batch;
    if (sameOptions && last.batch === batch) return last;
    this.joined = { options: plan.options, batch, bounds };
    return this.joined;
  }

  /** This lock's batch in this process, if there is one now (never makes one). */
  existing(): LocalBatch | undefined {
    return existingLocalBatch(this.scope, this.key);
  }
}
