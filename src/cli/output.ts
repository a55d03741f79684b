/**
 * What every command shares about talking to a person or a script: exit codes, one-line errors,
 * colours (only on a TTY, never with NO_COLOR), durations.
 */
import type { WriteStream } from 'node:tty';

/** Exit codes of the `locksmith` command (also listed by `--help` and in docs/cli.md). */
export const EXIT = Object.freeze({
  /** Success (`run`: the command's own code is passed through instead). */
  ok: 0,
  /** Any other failure (a Redis error, a release that found nothing to release, ...). */
  error: 1,
  /** Usage: an unknown option, a missing argument, a bad value. */
  usage: 64,
  /** The name exists in Redis but is not a lock, or no lock of that name exists. */
  notALock: 65,
  /** Redis could not be reached, refused the login, or did not answer in time. */
  unavailable: 69,
  /** `run`: the lock is held by someone else (`--no-wait`, or `--wait` ran out). */
  busy: 75,
  /** `run`: the lock was lost while the command ran; the command was stopped. */
  lost: 76,
  /** `run`: the command could not be started (not found, not executable). */
  notFound: 127,
});

export const EXIT_CODES_HELP = `Exit codes:
  0    success (run: the command's own exit code is passed through; killed by a signal: 128 + its number)
  1    other failure
  64   usage error
  65   no lock of that name, or the key is not a lock
  69   Redis unreachable, login refused, or no reply in time
  75   run: the lock is busy (--no-wait, or --wait ran out)
  76   run: the lock was lost while the command ran; the command was stopped
  127  run: the command could not be started`;

/** A mistake or condition to report in one line, with an exit code; never a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string) => new CliError(message, EXIT.usage);

/** Colours for one stream: codes only when it is a TTY and NO_COLOR is unset (https://no-color.org). */
export interface Paint {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
}

export function paintFor(stream: NodeJS.WriteStream | WriteStream, env = process.env): Paint {
  const enabled = stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (text: string) =>
    enabled ? `\x1b[${open}m${text}\x1b[${close}m` : text;
  return {
    enabled,
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
  };
}

/** "850 ms", "12.3 s", "4 min 10 s"; "-" for undefined. */
export function formatMs(ms: number | undefined): string {
  if (ms === undefined) return '-';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1_000)} s`;
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const MAX_DURATION_MS = 2 ** 31 - 1;

/** A duration option: milliseconds, or a number with ms, s, m or h ("30s", "1.5m"). */
export function parseDuration(option: string, value: string, shown = `--${option}`): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!match) {
    const what = value.trim().startsWith('-')
      ? 'a duration of zero or more'
      : 'milliseconds or a duration like 30s';
    throw usageError(`${shown} expects ${what}, got "${value}"`);
  }
  const ms = Math.round(Number(match[1]) * (UNITS[match[2] ?? 'ms'] as number));
  // Node's timers (and the library's) take at most 2^31 - 1 ms; a longer one would fire at once.
  if (ms > MAX_DURATION_MS) throw usageError(`${shown} is at most 596h (about 24 days), got "${value}"`);
  return ms;
}

/** A positive whole number option. */
export function parseCount(option: string, value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw usageError(`--${option} expects a whole number of at least 1, got "${value}"`);
  }
  return Number(value);
}

/** The first line of an error's message (library errors can be long; a user needs the gist). */
export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n', 1)[0]?.trim() || (error instanceof Error ? error.name : 'unknown error');
}

/** A holder as people read it: its label when the lease has one, else its owner token, shortened. */
export function holderName(holder: { readonly label?: string | undefined; readonly token: string }): string {
  if (holder.label) return holder.label;
  return holder.token.length > 12 ? `${holder.token.slice(0, 12)}…` : holder.token;
}
