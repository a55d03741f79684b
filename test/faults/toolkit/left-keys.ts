/**
 * What a run shows about a lock key left behind (`key-left-behind`), so its cause is visible and
 * not only its count: who holds the key on each node (the token, the stored value, how long it
 * still lives), the workers' events with that token (its grant, its give-backs), and, when the
 * nodes sat behind proxies that traced them, every script call that carried the token, per node,
 * in the order the node saw them, with what became of each (its reply, NOSCRIPT, lost, dropped),
 * and who sent it: the worker and its client kind ("w2 node-redis-5"), and the proxy's connection.
 */
import type { Redis as IORedis } from 'ioredis';
import { ownerTokenOf } from '../../fixtures/lock-value.js';
import type { HistoryEvent } from './protocol.js';
import type { TracedCommand } from './proxy.js';

/** One holder found in a key: its token and the raw value (a semaphore member, a lock value). */
interface FoundHolder {
  readonly token: string;
  readonly value: string;
  /** How long it still lives by the server's clock (ms), when known. */
  readonly remainingMs: number | undefined;
}

/** A Semaphore's member: "<permits>|<fence>|<#label>|<label><token>" (semaphore-holders.lua). */
function memberToken(member: string): string {
  const match = /^\d+\|\d+\|(\d+)\|/.exec(member);
  if (!match) return member;
  return member.slice(match[0].length + Number(match[1]));
}

/** The holders in `key` on one node, read on the admin connection. */
async function holdersIn(admin: IORedis, key: string): Promise<FoundHolder[]> {
  const type = await admin.type(key);
  if (type === 'zset') {
    const [seconds, micros] = (await admin.time()) as [string | number, string | number];
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const flat = await admin.zrange(key, '0', '-1', 'WITHSCORES');
    const found: FoundHolder[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const member = flat[i] as string;
      found.push({ token: memberToken(member), value: member, remainingMs: Number(flat[i + 1]) - now });
    }
    return found;
  }
  if (type === 'string') {
    const value = (await admin.get(key)) ?? '';
    return [{ token: ownerTokenOf(value), value, remainingMs: await admin.pttl(key) }];
  }
  return [{ token: '', value: `(${type})`, remainingMs: undefined }];
}

function describeEvent(event: HistoryEvent, t0: number): string {
  const { ev, ...rest } = event as HistoryEvent & { t?: number };
  const at = rest.t === undefined ? '' : ` @${(rest.t - t0).toFixed(1)}`;
  const fields = Object.entries(rest)
    .filter(([k]) => k !== 't' && k !== 'owner' && k !== 'token')
    .map(([k, v]) => `${k}=${typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(1) : String(v)}`);
  return `${ev}${at} ${fields.join(' ')}`;
}

function describeCall(call: TracedCommand, token: string, t0: number): string {
  // The token's argument, shortened; the other arguments as they were (numbers, TTLs, channels).
  const args = call.args.map((a) => (a === token ? '<token>' : a.length > 40 ? `${a.slice(0, 37)}...` : a));
  const answered = call.at === undefined ? '' : ` → @${(call.at - t0).toFixed(1)}`;
  return (
    `@${(call.t - t0).toFixed(1)} ${call.client ?? '?'} conn ${call.connection} ` +
    `${call.name} ${call.script ?? '?'} ` +
    `[${args.join(' ')}]${answered} ${call.outcome ?? '(no reply: connection closed)'}`
  );
}

/**
 * Lines explaining each key of `left` ("node <i>: <key>" with several nodes, else the key):
 * `admins[i]` reads node i, `traces[i]` is what node i's proxy traced (empty: none).
 */
export async function explainLeftKeys(
  left: readonly string[],
  admins: readonly IORedis[],
  events: readonly HistoryEvent[],
  traces: readonly (readonly TracedCommand[])[],
): Promise<string[]> {
  const lines: string[] = [];
  for (const entry of left) {
    const match = /^node (\d+): (.*)$/.exec(entry);
    const node = match ? Number(match[1]) : 0;
    const key = match ? (match[2] as string) : entry;
    const admin = admins[node];
    if (!admin) continue;
    let holders: FoundHolder[];
    try {
      holders = await holdersIn(admin, key);
    } catch (error) {
      lines.push(`left behind: ${entry}: could not read it (${String(error)})`);
      continue;
    }
    lines.push(`left behind: ${entry}`);
    for (const holder of holders) {
      lines.push(
        `  node ${node} holds token ${holder.token} (value ${JSON.stringify(holder.value)}, ` +
          `${holder.remainingMs ?? '?'} ms left)`,
      );
      if (!holder.token) continue;
      const calls = traces.map((trace) => trace.filter((call) => call.args.includes(holder.token)));
      // Its grant and give-backs, and the rest of the acquisitions it was granted to (their exit,
      // their release).
      const granted = events.filter((e) => e.ev === 'ok' && e.owner === holder.token);
      const sameCall = (e: HistoryEvent) =>
        'seq' in e && granted.some((g) => 'seq' in g && g.w === e.w && g.l === e.l && g.seq === e.seq);
      const mine = events.filter((e) => sameCall(e) || (e.ev === 'give-back' && e.token === holder.token));
      const times = [...calls.flat().map((call) => call.t), ...mine.flatMap((e) => ('t' in e ? [e.t] : []))];
      const t0 = times.length ? Math.min(...times) : 0;
      lines.push(`  that token's events (ms from its first call): ${mine.length ? '' : 'none'}`);
      for (const event of mine) lines.push(`    ${describeEvent(event, t0)}`);
      calls.forEach((list, i) => {
        if (traces[i]?.length === 0) return;
        lines.push(`  node ${i}: ${list.length} calls with that token`);
        for (const call of list) lines.push(`    ${describeCall(call, holder.token, t0)}`);
      });
    }
  }
  return lines;
}
