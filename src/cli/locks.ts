/**
 * A lock as the CLI shows it, whatever its kind, read with the library's own `inspect()`; and a
 * forced release, with the library's `releaseToken()`. The kind is told by the lock key's type
 * (keys.ts).
 */
import { type FairLockState, FairMutex, Mutex, ReentrantMutex, Semaphore } from 'redis-locksmith';
import type { Connection } from './connect.js';
import { cliKeys, WRITER_PERMITS } from './keys.js';
import { CliError, EXIT } from './output.js';

/** `mutex`: Mutex, FairMutex or a RedlockMutex server (they share a layout); `free`: not held now. */
export type LockKind = 'mutex' | 'reentrant' | 'semaphore' | 'read-write' | 'free';

export interface HolderView {
  /** The owner token (the lease's `token`). */
  readonly token: string;
  /** The lease's label (host:pid) when the server stores one; else undefined. */
  readonly label: string | undefined;
  readonly remainingTtlMs: number | undefined;
  /** Permits held (semaphores); 1 for a mutex. */
  readonly permits: number;
  /** `writer` / `reader` for a ReadWriteLock's holders. */
  readonly role?: 'writer' | 'reader';
  readonly fencingToken?: number;
}

export interface LockView {
  readonly name: string;
  readonly kind: LockKind;
  readonly locked: boolean;
  readonly holders: readonly HolderView[];
  readonly queueLength: number;
  readonly lastFencingToken: number;
  /** A Semaphore's stored limit (set with `setLimit()`), when there is one. */
  readonly limit?: number;
  /** A ReentrantMutex's hold count. */
  readonly holdCount?: number;
}

interface KeyFacts {
  readonly type: string;
  readonly fenced: boolean;
  readonly reentrant: boolean;
  readonly storedLimit: number | undefined;
}

async function keyFacts(connection: Connection, prefix: string, name: string): Promise<KeyFacts> {
  const keys = cliKeys(prefix, name);
  const [type, fenced, holds, limit] = await Promise.all([
    connection.command('TYPE', keys.lock),
    connection.command('EXISTS', keys.fence),
    connection.command('EXISTS', keys.holds),
    connection.command('GET', keys.limit),
  ]);
  const stored = typeof limit === 'string' && /^\d+$/.test(limit) ? Number(limit) : undefined;
  return {
    type: String(type),
    fenced: Number(fenced) === 1,
    reentrant: Number(holds) === 1,
    storedLimit: stored,
  };
}

/**
 * The lock `name` now. Throws a `CliError` (exit 65) when no lock of that name exists or its key
 * holds something else.
 */
export async function readLock(connection: Connection, prefix: string, name: string): Promise<LockView> {
  const facts = await keyFacts(connection, prefix, name);
  const options = { prefix };
  const { client } = connection;
  if ((facts.type === 'string' || facts.type === 'zset') && !facts.fenced) {
    // Every grant writes the fencing counter with the lock key: a key without one is someone else's.
    throw new CliError(
      `"${name}" is not a lock: ${cliKeys(prefix, name).lock} is a ${facts.type} without a fencing counter`,
      EXIT.notALock,
    );
  }
  switch (facts.type) {
    case 'string': {
      if (facts.reentrant) {
        const state = await connection.bounded(
          new ReentrantMutex(client, name, options).inspect(),
          'inspect',
        );
        return {
          ...handOffView(name, 'reentrant', state),
          holdCount: state.holdCount,
        };
      }
      const state = await connection.bounded(new FairMutex(client, name, options).inspect(), 'inspect');
      // A released lock's key keeps the release for 60 s: free, as a name without a key.
      return state.locked ? handOffView(name, 'mutex', state) : freeView(name, state);
    }
    case 'zset': {
      const lock = new Semaphore(client, name, { ...options, limit: facts.storedLimit ?? WRITER_PERMITS });
      const state = await connection.bounded(lock.inspect(), 'inspect');
      const readWrite = state.holders.some((holder) => holder.permits === WRITER_PERMITS);
      return {
        name,
        kind: readWrite ? 'read-write' : 'semaphore',
        locked: state.locked,
        holders: state.holders.map((holder) => ({
          token: holder.token,
          label: holder.label,
          remainingTtlMs: holder.remainingTtlMs,
          permits: holder.permits,
          fencingToken: holder.fencingToken,
          ...(readWrite
            ? { role: holder.permits === WRITER_PERMITS ? ('writer' as const) : ('reader' as const) }
            : {}),
        })),
        queueLength: state.queueLength,
        lastFencingToken: state.lastFencingToken,
        ...(facts.storedLimit !== undefined ? { limit: facts.storedLimit } : {}),
      };
    }
    case 'none': {
      if (!facts.fenced) {
        throw new CliError(
          `no lock named "${name}" (no key ${cliKeys(prefix, name).lock} or its fencing counter)`,
          EXIT.notALock,
        );
      }
      return freeView(
        name,
        await connection.bounded(new FairMutex(client, name, options).inspect(), 'inspect'),
      );
    }
    default:
      throw new CliError(
        `"${name}" is not a lock: ${cliKeys(prefix, name).lock} is a ${facts.type}, not a Locksmith lock key`,
        EXIT.notALock,
      );
  }
}

/** A hand-off lock nobody holds: its counter and waiters. */
function freeView(name: string, state: FairLockState): LockView {
  return {
    name,
    kind: 'free',
    locked: false,
    holders: [],
    queueLength: state.queueLength,
    lastFencingToken: state.lastFencingToken,
  };
}

/**
 * The limit a forced release of a permit lock hands permits on under (its script grants waiters up
 * to it): the stored one; a ReadWriteLock's (all permits); else the permits held now, which never
 * exceeds the holders' own limit, so a waiter is never granted past it (it may have to ask again).
 */
function releaseLimit(view: LockView): number {
  if (view.limit !== undefined) return view.limit;
  if (view.kind === 'read-write') return WRITER_PERMITS;
  return Math.max(
    1,
    view.holders.reduce((sum, holder) => sum + holder.permits, 0),
  );
}

function handOffView(
  name: string,
  kind: LockKind,
  state: Awaited<ReturnType<FairMutex['inspect']>>,
): LockView {
  return {
    name,
    kind,
    locked: state.locked,
    holders: state.ownerToken
      ? [
          {
            token: state.ownerToken,
            label: state.holderLabel,
            remainingTtlMs: state.remainingTtlMs,
            permits: 1,
          },
        ]
      : [],
    queueLength: state.queueLength,
    lastFencingToken: state.lastFencingToken,
  };
}

/**
 * Frees the lock `view` shows, releasing each of its holders' tokens as they would themselves
 * (a waiter, if any, is handed the lock). Resolves with the holders whose release took effect.
 */
export async function forceRelease(
  connection: Connection,
  prefix: string,
  view: LockView,
): Promise<HolderView[]> {
  const { client } = connection;
  const options = { prefix };
  const released: HolderView[] = [];
  for (const holder of view.holders) {
    let lock: { releaseToken(token: string): Promise<boolean> };
    let tokens = [holder.token];
    if (view.kind === 'reentrant') {
      const reentrant = new ReentrantMutex(client, view.name, options);
      tokens = [...(await connection.bounded(reentrant.inspect(), 'inspect')).holdTokens];
      lock = reentrant;
    } else if (view.kind === 'semaphore' || view.kind === 'read-write') {
      lock = new Semaphore(client, view.name, { ...options, limit: releaseLimit(view) });
    } else {
      // A Mutex's release skips waiters that are gone; a FairMutex's waiters are all live anyway.
      lock = new Mutex(client, view.name, options);
    }
    let any = false;
    for (const token of tokens) {
      if (await connection.bounded(lock.releaseToken(token), 'release')) any = true;
    }
    if (any) released.push(holder);
  }
  return released;
}
