/**
 * The protected resource: one counter per lock name, updated by read-modify-write from the
 * workers' critical sections. It lives in the test parent, which stamps nothing and trusts no
 * worker clock: everything it reports is what it saw, in the order it saw it.
 *
 * Fencing, as the shipped `fencedWrite` helper does it: every access (read or write) carries the
 * holder's fencing token, and the resource remembers the highest token it has seen. With `fenced`
 * on, an access with a token lower than that is refused, and one equal to it is accepted (the
 * holder's own repeated accesses under one lease). Reads count too (the helper only has writes;
 * a store that also serves reads must record their tokens the same way): once the next holder has read with its
 * token, a paused ex-holder's write is refused even though the new holder has not written yet;
 * checking writes only would let that write in and lose the new holder's update.
 *
 * Lost updates are counted whatever the mode: a write whose writer read a version that is no
 * longer current overwrote someone else's update. An accepted access with a token below the
 * highest seen is a stale token accepted (only possible with `fenced` off).
 */
import type { ResourceReply, ResourceRequest } from './protocol.js';

interface Cell {
  value: number;
  version: number;
  highest: number;
}

export interface ResourceStats {
  reads: number;
  writes: number;
  /** Accesses refused for carrying a token below the highest seen (fencing at work). */
  fencedRejections: number;
  /** Accesses accepted although their token was below the highest seen (a violation). */
  staleAccepted: number;
  /** Accepted writes based on a version someone else had already replaced (a violation). */
  lostUpdates: number;
}

export class FencedResource {
  readonly stats: ResourceStats = {
    reads: 0,
    writes: 0,
    fencedRejections: 0,
    staleAccepted: 0,
    lostUpdates: 0,
  };
  private readonly cells = new Map<string, Cell>();

  constructor(readonly fenced: boolean) {}

  handle(request: ResourceRequest): ResourceReply {
    let cell = this.cells.get(request.lock);
    if (!cell) {
      cell = { value: 0, version: 0, highest: 0 };
      this.cells.set(request.lock, cell);
    }
    // Lower than the highest seen is stale; equal is the same holder again (`fencedWrite`: token >= last).
    const stale = request.fence < cell.highest;
    if (stale && this.fenced) {
      this.stats.fencedRejections += 1;
      return { ok: false, reason: 'stale-token', highest: cell.highest };
    }
    if (stale) this.stats.staleAccepted += 1;
    cell.highest = Math.max(cell.highest, request.fence);
    if (request.op === 'read') {
      this.stats.reads += 1;
      return { ok: true, version: cell.version, value: cell.value };
    }
    this.stats.writes += 1;
    if (request.readVersion !== cell.version) this.stats.lostUpdates += 1;
    cell.version += 1;
    cell.value = request.value;
    return { ok: true, version: cell.version, value: cell.value };
  }
}
