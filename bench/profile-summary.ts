/**
 * Summarises V8 CPU profiles (`npm run bench -- --cpu-prof-dir=DIR`: one per worker and contended cell): self time by function, summed
 * over every profile in DIR, heaviest first, with the share of all sampled time.
 *
 *   node --import tsx bench/profile-summary.ts DIR [--top=N] [--match=REGEX]
 *
 * `--match` keeps functions whose file matches (e.g. `src/` for Locksmith's own code).
 * `--window-ms=N` counts, per profile, only the N ms with the most non-idle time (the measured cell,
 * not start-up: loading TypeScript through tsx dwarfs a few seconds of locking).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [dir, ...rest] = process.argv.slice(2);
if (!dir) throw new Error('usage: profile-summary.ts DIR [--top=N] [--match=REGEX]');
const option = (name: string) => rest.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const top = Number(option('top') ?? 30);
const match = option('match') ? new RegExp(option('match') as string) : undefined;
const windowMs = option('window-ms') ? Number(option('window-ms')) : undefined;

/** The [from, to) sample indexes of the busiest `ms`-long stretch of a profile. */
function busiestWindow(profile: Profile, idleIds: Set<number>, ms: number): [number, number] {
  const at: number[] = [];
  let t = 0;
  for (const delta of profile.timeDeltas) {
    t += delta;
    at.push(t);
  }
  let best: [number, number] = [0, at.length];
  let bestBusy = -1;
  let from = 0;
  let busy = 0;
  for (let to = 0; to < at.length; to += 1) {
    if (!idleIds.has(profile.samples[to] as number)) busy += profile.timeDeltas[to] ?? 0;
    while ((at[to] as number) - (at[from] as number) > ms * 1000) {
      if (!idleIds.has(profile.samples[from] as number)) busy -= profile.timeDeltas[from] ?? 0;
      from += 1;
    }
    if (busy > bestBusy) {
      bestBusy = busy;
      best = [from, to + 1];
    }
  }
  return best;
}

const selfUs = new Map<string, number>();
let totalUs = 0;
for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const idleIds = new Set(
    profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id),
  );
  const [from, to] = windowMs ? busiestWindow(profile, idleIds, windowMs) : [0, profile.samples.length];
  profile.samples.forEach((id, i) => {
    if (i < from || i >= to) return;
    const node = byId.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    if (!node) return;
    totalUs += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url
      ? `${url.replace(/^file:\/\/.*?\/(node_modules|src|bench)\//, '$1/')}:${lineNumber + 1}`
      : '';
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    selfUs.set(key, (selfUs.get(key) ?? 0) + us);
  });
}
const rows = [...selfUs.entries()]
  .filter(([key]) => !match || match.test(key))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top);
console.log(`total sampled: ${(totalUs / 1e6).toFixed(2)} s`);
for (const [key, us] of rows) {
  console.log(
    `${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${(us / 1e3).toFixed(0).padStart(6)} ms  ${key}`,
  );
}
