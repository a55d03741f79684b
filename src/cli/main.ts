#!/usr/bin/env node
/**
 * The `locksmith` command: distributed locks for shell scripts, cron jobs and deploy steps, and a
 * view of the locks for whoever operates them. Uses only the library's public API.
 */
import { LockError } from 'redis-locksmith';
import { listCommand, releaseCommand, statusCommand } from './inspect-commands.js';
import { CliError, EXIT, EXIT_CODES_HELP, oneLine } from './output.js';
import { runCommand } from './run.js';
import { watchCommand } from './watch.js';

const HELP = `Usage: locksmith <command> [options]

Commands:
  run <name> -- <command…>   run a command holding the lock <name> (flock across machines)
  status <name>              show one lock: holder, time left, waiters, fencing token
  list [pattern]             list the locks whose name matches a glob (SCAN, never KEYS)
  release <name> --force     free a lock whoever holds it, and say who held it
  watch [pattern]            a live view of the locks, redrawn in place

Every command takes --help, --redis <url> (or REDIS_URL), --tls-ca <file> and --prefix <text>;
status, list and watch take --json.

${EXIT_CODES_HELP}`;

const COMMANDS: Record<string, (argv: readonly string[]) => Promise<number>> = {
  run: runCommand,
  status: statusCommand,
  list: listCommand,
  release: releaseCommand,
  watch: watchCommand,
};

/** Parse errors of node:util parseArgs are the user's: usage, exit 64. */
function isParseError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    const topic = command === 'help' ? rest[0] : undefined;
    const run = topic === undefined ? undefined : COMMANDS[topic];
    if (run) return run(['--help']);
    process.stdout.write(`${HELP}\n`);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  if (command === '--version' || command === '-v') {
    const { createRequire } = await import('node:module');
    const pkg = createRequire(import.meta.url)('redis-locksmith/package.json') as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    return EXIT.ok;
  }
  const run = COMMANDS[command];
  if (!run)
    throw new CliError(
      `unknown command "${command}" (commands: ${Object.keys(COMMANDS).join(', ')}; see locksmith --help)`,
      EXIT.usage,
    );
  try {
    return await run(rest);
  } catch (error) {
    if (isParseError(error)) {
      throw new CliError(`${oneLine(error)} (see locksmith ${command} --help)`, EXIT.usage);
    }
    throw error;
  }
}

/** The exit code and one line for an error: a stack trace only with LOCKSMITH_DEBUG set. */
export function describeFailure(error: unknown): { code: number; line: string } {
  if (error instanceof CliError) return { code: error.exitCode, line: error.message };
  // A bad lock name or value, refused by the library's checks.
  if (error instanceof TypeError || error instanceof RangeError)
    return { code: EXIT.usage, line: oneLine(error) };
  if (error instanceof LockError && error.code === 'REDIS_UNAVAILABLE')
    return { code: EXIT.unavailable, line: oneLine(error) };
  return { code: EXIT.error, line: oneLine(error) };
}

const code = await main(process.argv.slice(2)).catch((error: unknown) => {
  const { code, line } = describeFailure(error);
  process.stderr.write(`locksmith: ${line}\n`);
  if (process.env.LOCKSMITH_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  return code;
});
process.exitCode = code;
// Exit soon even if something still holds the event loop (a client whose Redis stopped answering);
// not at once, so that output still in flight to a pipe is written.
setTimeout(() => process.exit(code), 500).unref();
