export type {
  IoRedisClient,
  IoRedisClusterClient,
  IoRedisClusterNode,
  NodeRedisClient,
  NodeRedisClusterClient,
  NodeRedisEvalOptions,
  NodeRedisNodeClient,
  NodeRedisSentinelClient,
  RedisClient,
  ValkeyGlideClient,
  ValkeyGlideClusterClient,
} from './adapters/client-types.js';
export type { LocalBatchOptions } from './batching/batch-options.js';
export type { Clock } from './clock.js';
export { monotonicClock } from './clock.js';
export { RedisExpLock, type RedisExpLockOptions } from './compat/redis-exp-lock.js';
export { acquireLockWithTimeout, releaseLock } from './compat/redis-in-action.js';
export {
  acquireFairSemaphore,
  acquireSemaphore,
  acquireSemaphoreWithLock,
  refreshFairSemaphore,
  releaseFairSemaphore,
  releaseSemaphore,
} from './compat/redis-in-action-semaphore.js';
export {
  AlreadyAcquiredError,
  ClientClosedError,
  CrossSlotError,
  LockError,
  type LockErrorCode,
  LockLostError,
  type LockLostReason,
  LockTimeoutError,
  type NodeOutcome,
  NotHeldError,
  NotReplicatedError,
  PermitsOverLimitError,
  QuorumError,
  RedisCommandError,
  RedisUnavailableError,
  TooManyAttemptsError,
  UnexpectedReplyError,
  UnsupportedClientError,
  UnsupportedServerError,
  WouldDeadlockError,
} from './errors.js';
export {
  LOCK_EVENTS_CHANNEL,
  type LockEvent,
  type LockEventType,
  subscribeLockEvents,
} from './events.js';
export { type FencedWriteResult, fencedWrite } from './fencing.js';
export { Lease } from './lease/lease.js';
export { LockOwner } from './lock-owner.js';
export {
  type AcquireOptions,
  defaultLockOptions,
  type LockOptions,
  type TryAcquireOptions,
} from './options.js';
export { defaultFairLockOptions, type FairLockOptions, FairMutex } from './primitives/fair-mutex.js';
export type { LockedWork } from './primitives/lock-shell.js';
export {
  defaultMultiMutexOptions,
  MultiMutex,
  type MultiMutexOptions,
  type MultiMutexState,
} from './primitives/multi-mutex.js';
export { defaultMutexOptions, Mutex, type MutexOptions } from './primitives/mutex.js';
export {
  defaultReadWriteLockOptions,
  type ReadLock,
  ReadWriteLock,
  type ReadWriteLockOptions,
  type WriteLock,
} from './primitives/read-write-lock.js';
export {
  defaultReentrantLockOptions,
  type ReentrantAcquireOptions,
  type ReentrantLockOptions,
  ReentrantMutex,
  type ReentrantTryAcquireOptions,
} from './primitives/reentrant-mutex.js';
export {
  defaultSemaphoreOptions,
  Semaphore,
  type SemaphoreAcquireOptions,
  type SemaphoreOptions,
  type SemaphoreTryAcquireOptions,
} from './primitives/semaphore.js';
export type { FairLockState } from './protocol/hand-off.js';
export type { LockState } from './protocol/lock-state.js';
export type { ReadWriteLockState } from './protocol/read-write-lock.js';
export type { ReentrantLockState } from './protocol/reentrant-mutex.js';
export type { SemaphoreHolder, SemaphoreState } from './protocol/semaphore.js';
export { RedlockMutex, type RedlockState } from './redlock/redlock-mutex.js';
export { defaultRedlockOptions, type RedlockOptions } from './redlock/redlock-options.js';
export { RedlockSemaphore, type RedlockSemaphoreState } from './redlock/redlock-semaphore.js';
export {
  defaultRedlockSemaphoreOptions,
  type RedlockSemaphoreOptions,
} from './redlock/redlock-semaphore-options.js';
