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
  help <command>             the options of one command (as locksmith <command> --help)

Every command takes --help, --redis <url> (or REDIS_URL), --tls-ca <file>, --prefix <text> and
--timeout <ms>; status, list, release and watch take --json (an error is then JSON on stdout too).
locksmith --version prints the version.

Examples:
  locksmith run -n nightly-report -- ./report.sh    run unless another host is running it (else 75)
  locksmith run deploy --wait 10m -- ./deploy.sh    wait up to 10 minutes for the previous deploy
  locksmith status deploy --json                    who holds "deploy", for how long still
  locksmith list 'jobs:*' --held                    every held lock whose name starts with jobs:
  locksmith release deploy --force                  take "deploy" from a holder that is stuck

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

function commandNamed(name: string): (argv: readonly string[]) => Promise<number> {
  const run = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (run) return run;
  throw new CliError(
    `unknown command "${name}" (commands: ${Object.keys(COMMANDS).join(', ')}; see locksmith --help)`,
    EXIT.usage,
  );
}

/** Whether the command was asked for JSON (before a \`--\`, after which the words are run's command's). */
function wantsJson(argv: readonly string[]): boolean {
  const split = argv.indexOf('--');
  return (split === -1 ? argv : argv.slice(0, split)).includes('--json');
}

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    const topic = command === 'help' ? rest[0] : undefined;
    if (topic !== undefined) return commandNamed(topic)(['--help']);
    process.stdout.write(`${HELP}\n`);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  if (command === '--version' || command === '-v') {
    const { createRequire } = await import('node:module');
    const pkg = createRequire(import.meta.url)('redis-locksmith/package.json') as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    return EXIT.ok;
  }
  const run = commandNamed(command);
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
  // A script that asked for JSON reads stdout: the error is there too, as JSON.
  if (wantsJson(process.argv.slice(2)))
    process.stdout.write(`${JSON.stringify({ error: { message: line, exitCode: code } })}\n`);
  if (process.env.LOCKSMITH_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  return code;
});
process.exitCode = code;
// Exit soon even if something still holds the event loop (a client whose Redis stopped answering);
// not at once, so that output still in flight to a pipe is written.
setTimeout(() => process.exit(code), 500).unref();
