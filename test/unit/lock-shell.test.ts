/**
 * The lock shell's own promises, on a lock kept in memory (no Redis: the shell's logic only) and a
 * clock the test moves.
 *
 * Issue 34, item 11: `acquire()` resolved with a lease whose validity had run out between the
 * grant and the resolution (a reply delayed ~400 ms for a 400 ms TTL): the signal aborted 3 ms
 * later. A grant with no validity left when the call resolves is given back, and the call goes on.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Clock } from '../../src/clock.js';
import { defaultLockOptions, type LockOptions } from '../../src/options.js';
import type { Plan } from '../../src/plan.js';
import { LockShell } from '../../src/primitives/lock-shell.js';
import type { LockState } from '../../src/protocol/lock-state.js';
import type { Attempts } from '../../src/waiting/attempts.js';

/** A clock that stands still, except for one jump at its n-th reading once armed. */
class JumpingClock implements Clock {
  t = 1_000;
  reads = 0;
  private jumpAt = 0;
  private jumpMs = 0;
  now(): number {
    this.reads += 1;
    if (this.reads === this.jumpAt) this.t += this.jumpMs;
    return this.t;
  }
  /** Jumps `ms` at the `read`-th reading from now (1: the next). */
  arm(read: number, ms: number): void {
    this.jumpAt = this.reads + read;
    this.jumpMs = ms;
  }
}

/** A one-holder lock in memory; its first grant arms the clock's jump (a reply that came late). */
class MemoryLock extends LockShell<LockOptions, LockState> {
  owner: string | undefined;
  fence = 0;
  readonly released: string[] = [];
  /** The clock's readings when the first grant was made (after its send time was read). */
  readsAtGrant = 0;
  private armed = false;

  constructor(
    private readonly clock: JumpingClock,
    private readonly jumpAtRead: number | undefined,
  ) {
    super('memory', Object.freeze({ ...defaultLockOptions, ttlMs: 1_000, clock, autoExtend: false }));
  }

  protected planAttempts(plan: Plan<LockOptions>): Attempts {
    return {
      attempt: () => {
        if (this.owner !== undefined) return { acquired: false, holderPttlMs: 10 };
        this.owner = plan.token;
        const sentAt = this.clock.now();
        if (!this.armed) this.readsAtGrant = this.clock.reads;
        if (this.jumpAtRead !== undefined && !this.armed) {
          this.armed = true;
          this.clock.arm(this.jumpAtRead, 5_000);
        }
        this.fence += 1;
        return Promise.resolve({ acquired: true as const, fencingToken: this.fence, sentAt });
      },
    };
  }

  protected async sendRelease(token: string): Promise<boolean> {
    this.released.push(token);
    if (this.owner !== token) return false;
    this.owner = undefined;
    return true;
  }

  protected async sendExtend(token: string): Promise<boolean> {
    return this.owner === token;
  }

  protected async readState(): Promise<LockState> {
    return {
      locked: this.owner !== undefined,
      ownerToken: this.owner,
      remainingTtlMs: undefined,
      lastFencingToken: this.fence,
      holderLabel: undefined,
    };
  }
}

describe('lock shell: a lease is handed out only with validity left', () => {
  test('validity running out anywhere between the grant and the resolution: given back, and the call goes on', async () => {
    // How many times the clock is read from the grant to the resolution, when nothing jumps.
    const dry = new JumpingClock();
    const dryLock = new MemoryLock(dry, undefined);
    await dryLock.acquire();
    const reads = dry.reads - dryLock.readsAtGrant;
    assert.ok(reads > 0);
    for (let read = 1; read <= reads; read += 1) {
      const clock = new JumpingClock();
      const lock = new MemoryLock(clock, read);
      const lease = await lock.acquire();
      assert.equal(lease.isHeld, true, `clock jumped at reading ${read} of ${reads}: a lease born lost`);
      assert.equal(lease.signal.aborted, false);
      assert.equal(lease.fencingToken, 2, 'the late grant was given back and the lock taken again');
      assert.equal(lock.released.length, 1);
      assert.equal(lock.owner, lease.token);
    }
  });
});
