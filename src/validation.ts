/**
 * Argument checks that run before anything is sent to Redis. Messages name the argument, what was
 * expected and what was given, so a typo is found from the message alone.
 */
import { hintForUnknownOption } from './option-hints.js';
import { MIN_VALIDITY_MS, minTtlMs } from './timing.js';

/** How much of a long string a message quotes: enough to recognise it, not a screenful. */
const QUOTED_CHARS = 60;

export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    if (value.length <= QUOTED_CHARS) return `\`${JSON.stringify(value)}\` (string)`;
    return `\`${JSON.stringify(value.slice(0, QUOTED_CHARS))}…\` (a string of ${value.length} characters)`;
  }
  if (typeof value === 'bigint') return `\`${value}n\` (bigint)`;
  if (typeof value === 'symbol') return `\`${String(value)}\` (symbol)`;
  if (typeof value === 'function') return 'a function';
  if (value === null) return '`null`';
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return `\`${String(value)}\` (${typeof value})`;
}

function fail(
  Kind: typeof TypeError | typeof RangeError,
  name: string,
  expected: string,
  value: unknown,
): never {
  throw new Kind(`Expected \`${name}\` to be ${expected}, got ${describeValue(value)}`);
}

/** A whole number of milliseconds, > 0 (or ≥ 0 with `allowZero`), at most `max`. */
export function checkMs(
  name: string,
  value: unknown,
  { allowZero = false, allowInfinity = false, max = 2 ** 31 - 1 } = {},
): number {
  const expected = `a ${allowZero ? 'non-negative' : 'positive'} integer of milliseconds${allowInfinity ? ' or Infinity' : ''}`;
  if (typeof value !== 'number') fail(TypeError, name, expected, value);
  if (value === Number.POSITIVE_INFINITY && allowInfinity) return value;
  if (!Number.isInteger(value)) fail(RangeError, name, expected, value);
  if (value < 0 || (value === 0 && !allowZero)) fail(RangeError, name, expected, value);
  if (value > max) fail(RangeError, name, `${expected} no larger than ${max}`, value);
  return value;
}

/**
 * A lease TTL: a whole number of milliseconds long enough to leave usable validity after the drift
 * margin for `driftFactor` (a 3 ms TTL passes `checkMs` but could never give a usable lease).
 */
export function checkTtlMs(name: string, value: unknown, driftFactor: number): number {
  checkMs(name, value);
  const min = minTtlMs(driftFactor);
  if ((value as number) < min) {
    fail(
      RangeError,
      name,
      `at least ${min} ms with driftFactor ${driftFactor} (validity is ttlMs − ⌈ttlMs·driftFactor⌉ − 2 ms and must be at least ${MIN_VALIDITY_MS} ms)`,
      value,
    );
  }
  return value as number;
}

/** A whole count ≥ 0, or Infinity when allowed. */
export function checkCount(name: string, value: unknown, { allowInfinity = false, min = 0 } = {}): number {
  const expected = `an integer ≥ ${min}${allowInfinity ? ' or Infinity' : ''}`;
  if (typeof value !== 'number') fail(TypeError, name, expected, value);
  if (value === Number.POSITIVE_INFINITY && allowInfinity) return value;
  if (!Number.isInteger(value) || value < min) fail(RangeError, name, expected, value);
  return value;
}

/** Permits asked of a Semaphore (already a whole number ≥ 1): at most its limit, or it could never be granted. */
export function checkPermits(name: string, value: number, limit: number): number {
  if (value > limit) fail(RangeError, name, `at most the semaphore's limit (${limit})`, value);
  return value;
}

/** A finite number in [min, max]. */
export function checkFraction(name: string, value: unknown, min: number, max: number): number {
  const expected = `a number from ${min} to ${max}`;
  if (typeof value !== 'number') fail(TypeError, name, expected, value);
  if (!Number.isFinite(value) || value < min || value > max) fail(RangeError, name, expected, value);
  return value;
}

export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') fail(TypeError, name, 'a boolean', value);
  return value;
}

export function checkSignal(name: string, value: unknown): AbortSignal {
  if (!(value instanceof AbortSignal)) fail(TypeError, name, 'an AbortSignal', value);
  return value;
}

export function checkFunction<F>(name: string, value: unknown): F {
  if (typeof value !== 'function') fail(TypeError, name, 'a function', value);
  return value as F;
}

const MAX_NAME_LENGTH = 1024;

const NAME_EXPECTED = `a non-empty string of at most ${MAX_NAME_LENGTH} characters`;
const PREFIX_EXPECTED = `${NAME_EXPECTED} without \`{\` or \`}\``;

/** A string of 1 to MAX_NAME_LENGTH characters; `expected` is the whole rule, for the message. */
function checkBoundedString(name: string, value: unknown, expected: string): string {
  if (typeof value !== 'string') fail(TypeError, name, expected, value);
  if (value.length === 0 || value.length > MAX_NAME_LENGTH) fail(RangeError, name, expected, value);
  return value;
}

/**
 * A lock name. Keys are built as `prefix:{name}suffix` (see `lockKeys`), and Redis Cluster hashes
 * only the hash tag: the text between a key's first `{` (ours, since prefixes have no braces) and
 * the first `}` after it. For a name with braces that tag is the name up to its first `}` (the
 * whole name when it has none): the same for every key of the lock, so they still share one slot.
 * Only a name that *starts* with `}` breaks this: its tag would be empty, and Redis then hashes
 * each key whole, scattering one lock over several slots.
 */
export function checkName(name: string, value: unknown): string {
  if (checkBoundedString(name, value, NAME_EXPECTED).startsWith('}')) {
    fail(
      RangeError,
      name,
      'a name that does not start with `}` (keys are `prefix:{name}…`, and Redis Cluster hashes only the text between the first `{` and the next `}`: a leading `}` leaves that hash tag empty, so each key of the lock would be hashed whole and land in a different slot)',
      value,
    );
  }
  return value as string;
}

/**
 * A key prefix. Braces are refused: the lock's own `{` must be the first one in every key, so that
 * the hash tag comes from the name (see `checkName`).
 */
export function checkPrefix(name: string, value: unknown): string {
  if (/[{}]/.test(checkBoundedString(name, value, PREFIX_EXPECTED)))
    fail(RangeError, name, PREFIX_EXPECTED, value);
  return value as string;
}

/** Any Redis key chosen by the caller (braces allowed: the caller may want its own hash tag). */
export function checkKey(name: string, value: unknown): string {
  if (typeof value !== 'string') fail(TypeError, name, 'a non-empty string', value);
  if (value.length === 0) fail(RangeError, name, 'a non-empty string', value);
  return value;
}

/** A lease token as given back by a caller (book-style `releaseLock`). */
export function checkToken(name: string, value: unknown): string {
  if (typeof value !== 'string') fail(TypeError, name, 'a non-empty string', value);
  if (value.length === 0 || value.length > 256)
    fail(RangeError, name, 'a non-empty string of at most 256 characters', value);
  return value;
}

/**
 * Options objects are checked for unknown keys, because `{ ttl: 5000 }` silently ignored (when the
 * option is `ttlMs`) is exactly the kind of mistake that turns into a lock expiring mid-write. The
 * message says where another library's option went (`retryCount` → `retries`, see option-hints.ts).
 */
export function checkOptionsObject<T extends object>(
  name: string,
  value: unknown,
  known: readonly (keyof T & string)[],
): Partial<T> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail(TypeError, name, 'an options object', value);
  }
  for (const key of Object.keys(value)) {
    if (!(known as readonly string[]).includes(key)) {
      const hint = hintForUnknownOption(key, known);
      throw new TypeError(
        `Unknown option \`${key}\` in \`${name}\`${hint ? `; ${hint}` : ''} (known: ${known.join(', ')})`,
      );
    }
  }
  return value as Partial<T>;
}

/**
 * The clients of a Redlock quorum: a non-empty array of distinct objects (the same client twice
 * would count one server twice toward the quorum). Whether each is a supported client is checked
 * by the adapters, next.
 */
export function checkClientList(name: string, value: unknown): readonly unknown[] {
  if (!Array.isArray(value)) fail(TypeError, name, 'an array of Redis clients, one per server', value);
  if (value.length === 0) fail(RangeError, name, 'at least one Redis client', value);
  const seen = new Set<unknown>();
  value.forEach((client, i) => {
    if (seen.has(client)) {
      throw new RangeError(
        `Expected \`${name}\` to hold one client per server, got the same client twice (at ${value.indexOf(client)} and ${i})`,
      );
    }
    seen.add(client);
  });
  return value;
}

/**
 * The names of a lock over several names (MultiMutex): a non-empty array of names (each as
 * `checkName`), no two the same. Returns a frozen copy.
 */
export function checkNames(name: string, value: unknown): readonly string[] {
  if (!Array.isArray(value)) fail(TypeError, name, 'a non-empty array of lock names', value);
  if (value.length === 0) fail(RangeError, name, 'a non-empty array of lock names', value);
  const seen = new Set<string>();
  value.forEach((each, i) => {
    checkName(`${name}[${i}]`, each);
    if (seen.has(each)) fail(RangeError, `${name}[${i}]`, 'a name not given before (duplicate names)', each);
    seen.add(each);
  });
  return Object.freeze([...(value as string[])]);
}
