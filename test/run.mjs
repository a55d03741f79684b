/**
 * `npm test`: every unit and integration test file, four per core at once, the longest files first.
 *
 * `node --test` sorts the files it is given by path, so a long file whose name sorts late starts
 * late and becomes the run's tail; `run()` starts files in the order it is given. Files not named
 * in `LONGEST` follow in path order. Arguments, if any, are the files to run instead of all.
 *
 * The files run compiled (`compileTests`), not with `--import tsx`: tsx costs each file's process
 * about half a second of CPU to start and more to resolve its imports through its loader thread,
 * and on a busy 2-core machine CI is bound by CPU. So this runner is plain JavaScript: each file's
 * process inherits its `execArgv` (`--enable-source-maps`, so a failure points into the .ts files).
 */
import { readdirSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { fileURLToPath } from 'node:url';
import { compileTests } from './compile-tests.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const FOLDERS = ['test/unit', 'test/integration', 'test/integration/contract'];

/**
 * What starts first, longest first: files of over about 1.5 minutes in a run of eight at once beside a
 * busy loop (2026-11-29), then the lock contract's files (about a minute each). A file named nowhere
 * here still runs, only later; a name here that no longer exists is ignored.
 */
const LONGEST = [
  'test/integration/lock-contract-cluster.test.ts',
  'test/integration/semaphore.test.ts',
  'test/integration/fair-mutex.test.ts',
  'test/integration/trust-clients.test.ts',
  'test/integration/redlock.test.ts',
  'test/integration/redlock-fencing.test.ts',
  'test/integration/trust-waiting.test.ts',
  'test/integration/cli.test.ts',
  'test/integration/read-write-lock.test.ts',
  'test/integration/coming-from.test.ts',
  'test/integration/process-exit.test.ts',
  'test/integration/sentinel.test.ts',
  'test/integration/mutual-exclusion.test.ts',
  'test/integration/readme.test.ts',
  'test/integration/contract/',
];

/**
 * Files at once (TEST_CONCURRENCY overrides): four per core. Their time is mostly waiting (TTLs,
 * timeouts, process starts): on the 2-core machine with one core held busy, eight at once kept
 * about 0.8 of a core busy and took 415 s, against 645 s four at once (2026-11-29).
 */
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? 4 * availableParallelism());

/** @returns {string[]} every test file, relative to the root, in the order they start */
function testFiles() {
  const all = FOLDERS.flatMap((folder) =>
    readdirSync(join(ROOT, folder))
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => `${folder}/${name}`)
      .sort(),
  );
  // A folder (a name ending in "/") ranks every file in it.
  /** @param {string} file */
  const rank = (file) => {
    // biome-ignore lint/complexity/useIndexOf: an entry ending in "/" matches every file under it
    const i = LONGEST.findIndex((entry) => (entry.endsWith('/') ? file.startsWith(entry) : file === entry));
    return i === -1 ? LONGEST.length : i;
  };
  // Array.prototype.sort is stable: files of equal rank keep their path order.
  return all.sort((a, b) => rank(a) - rank(b));
}

const args = process.argv.slice(2);
const sources =
  args.length > 0 ? args.map((file) => resolve(file)) : testFiles().map((file) => join(ROOT, file));
const outdir = join(ROOT, '.tmp', 'compiled-tests', String(process.pid));
process.once('exit', () => rmSync(outdir, { recursive: true, force: true }));
const files = await compileTests(ROOT, sources, outdir);

/**
 * A file still running after this is cancelled and fails: the longest take 3–5 minutes beside a busy
 * loop, and one that hangs must not hold CI until its own limit (test/exit-guard.ts names what keeps
 * a finished file's process alive sooner).
 */
const FILE_TIMEOUT_MS = 20 * 60_000;

run({ files, concurrency: CONCURRENCY, timeout: FILE_TIMEOUT_MS })
  .on('test:fail', () => {
    process.exitCode = 1;
  })
  .compose(new spec())
  .pipe(process.stdout);
