/**
 * What the CLI knows of Locksmith's key layout (src/protocol/keys.ts), in one place: every key of
 * a lock is `prefix:{name}` or `prefix:{name}<suffix>`, and no suffix contains `}`, so a key's name
 * is the text between the first `{` after the prefix and the last `}`.
 *
 * - `prefix:{name}`: the lock itself, while held. A string for the hand-off kinds (Mutex, FairMutex,
 *   ReentrantMutex, each RedlockMutex server), a sorted set of holders for the permit kinds
 *   (Semaphore, ReadWriteLock).
 * - `:fence`: the fencing counter, kept for ever: a lock that was ever taken has one.
 * - `:holds`: a ReentrantMutex's other holds; `:limit`: a Semaphore's stored limit.
 * - `:queue`, `:waiting`, `:waiters`, `:line`, `:last-released`, `:multi-waiting` and `:reserved`
 *   (MultiMutex): waiters and bookkeeping.
 * - `:released:<token>`: a Redlock kind's release tombstone, kept a minute (redlock/call-stamp.ts);
 *   its tokens are generated hex, without `}`.
 */

export const DEFAULT_PREFIX = 'locksmith';

/** The keys of `name` the CLI reads. */
export function cliKeys(prefix: string, name: string) {
  const lock = `${prefix}:{${name}}`;
  return { lock, fence: `${lock}:fence`, holds: `${lock}:holds`, limit: `${lock}:limit` };
}

/** The permits a ReadWriteLock's writer holds (src/primitives/read-write-lock.ts: all of them). */
export const WRITER_PERMITS = 2_147_483_647;

/** Escapes the glob characters of SCAN MATCH in literal text (the prefix). */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * The SCAN MATCH pattern for the keys of every lock whose name matches `namePattern` (a glob: `*`,
 * `?`, `[abc]`, as Redis reads it). It may match more (a `}` in a name); `nameOfKey` and
 * `matchesName` are exact.
 */
export function scanPattern(prefix: string, namePattern: string): string {
  return `${escapeGlob(prefix)}:{${namePattern}}*`;
}

/** The lock name a key belongs to, or undefined for a key that is not of this prefix's layout. */
export function nameOfKey(prefix: string, key: string): string | undefined {
  const start = `${prefix}:{`;
  if (!key.startsWith(start)) return undefined;
  const end = key.lastIndexOf('}');
  if (end < start.length) return undefined;
  return key.slice(start.length, end);
}

/** Whether `name` matches the glob `pattern` (`*`, `?`, `[...]`, `\` escapes, as SCAN MATCH). */
export function matchesName(pattern: string, name: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i] as string;
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '\\' && i + 1 < pattern.length) {
      i += 1;
      source += (pattern[i] as string).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else if (c === '[') {
      const close = pattern.indexOf(']', i + 1);
      if (close === -1) source += '\\[';
      else {
        const body = pattern.slice(i + 1, close).replace(/\\/g, '\\\\');
        source += `[${body.startsWith('^') ? `^${body.slice(1)}` : body}]`;
        i = close;
      }
    } else source += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's').test(name);
}
