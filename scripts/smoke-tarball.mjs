#!/usr/bin/env node
// Tarball smoke test (`npm run smoke:pack [-- path/to/redis-locksmith-x.y.z.tgz]`): installs the
// packed package the way a user would, into a scratch project outside the repo, together with every
// supported client (Valkey GLIDE's cluster client aside), and runs an ESM and a CommonJS example per client (scripts/smoke/) against a
// redis-server of its own. It catches what the tests on src/ cannot: a tarball without dist/, broken
// `exports` for either module system, a client major the adapter no longer fits, a process that does
// not exit once the user has closed their client.
// Without a tarball argument it runs `npm pack` itself (prepack builds dist/).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = join(root, 'scripts/smoke');

/**
 * Each supported client major, installed under an npm alias so that all of them fit in one scratch
 * project (one `npm install`). `family` picks the example; its `from 'ioredis'` / `from 'redis'`
 * import is pointed at the alias when copied.
 */
const clients = [
  { alias: 'ioredis5', spec: 'npm:ioredis@^5', family: 'ioredis' },
  { alias: 'ioredis6', spec: 'npm:ioredis@^6', family: 'ioredis' },
  // The Valkey project's fork of ioredis: same API, so the ioredis example runs unchanged.
  { alias: 'iovalkey', spec: 'npm:iovalkey@^0.4', family: 'ioredis' },
  { alias: 'redis4', spec: 'npm:redis@^4', family: 'redis' },
  { alias: 'redis5', spec: 'npm:redis@^5', family: 'redis' },
  { alias: 'redis6', spec: 'npm:redis@^6', family: 'redis' },
  // Under its own name: its native core comes as an optional dependency for the platform.
  { alias: '@valkey/valkey-glide', spec: 'npm:@valkey/valkey-glide@^2.5', family: '@valkey/valkey-glide' },
];
const fixtureOf = { ioredis: 'ioredis', redis: 'node-redis', '@valkey/valkey-glide': 'valkey-glide' };
const formats = ['mjs', 'cjs'];
/** Per example; generous because the CI machine is shared. A hang (a client left open) fails here. */
const exampleTimeoutMs = 30_000;
/**
 * Examples mostly wait (the subscriber connection lingers 1 s after the last waiter before it
 * closes and lets the process exit), so a few at a time cost little CPU and save most of the time.
 */
const exampleConcurrency = 4;

// A fixture that no client family runs would be dead weight that looks like coverage.
for (const file of readdirSync(fixtures)) {
  const family = file.replace(/\.(mjs|cjs)$/, '');
  if (!Object.values(fixtureOf).includes(family))
    throw new Error(`scripts/smoke/${file} is run by no client`);
}

const scratch = mkdtempSync(join(tmpdir(), 'redis-locksmith-smoke-'));
let server;
try {
  const tarball = process.argv[2] ? resolve(process.argv[2]) : pack(scratch);
  console.log(`smoke: ${tarball}`);
  console.log(`smoke: scratch project ${scratch}`);
  install(scratch, tarball);
  typeCheckConsumers(scratch);
  server = await startRedis(scratch);
  const port = server.port;
  // A database of its own per example, so a failed one cannot leave a lock that stalls another.
  const examples = clients.flatMap((client) => formats.map((format) => ({ client, format })));
  const started = Date.now();
  const results = await withConcurrency(examples, exampleConcurrency, ({ client, format }, i) =>
    runExample(scratch, client, format, `redis://127.0.0.1:${port}/${i}`),
  );
  console.log(`smoke: ${examples.length} examples in ${Date.now() - started} ms`);
  const failed = results.filter((r) => !r.ok).length;
  console.log(`${results.length - failed} passed, ${failed} failed`);
  process.exitCode = failed === 0 ? 0 : 1;
} catch (error) {
  console.error(error);
  console.log('0 passed, 1 failed');
  process.exitCode = 1;
} finally {
  if (server) await server.stop();
  rmSync(scratch, { recursive: true, force: true });
}

/** Runs `run` over `items`, at most `size` at a time; results in the order of `items`. */
async function withConcurrency(items, size, run) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await run(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(size, items.length) }, worker));
  return results;
}

function pack(into) {
  console.log('smoke: npm pack (prepack builds dist/)');
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', into], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Lifecycle scripts may print before the JSON; the report is the trailing array.
  const [{ filename }] = JSON.parse(out.slice(out.lastIndexOf('\n[')));
  return join(into, filename);
}

function install(dir, tarball) {
  const manifest = { name: 'redis-locksmith-smoke', private: true, version: '0.0.0' };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const started = Date.now();
  execFileSync(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      tarball,
      ...clients.map((c) => `${c.alias}@${c.spec}`),
    ],
    { cwd: dir, stdio: 'inherit' },
  );
  const versions = clients.map((c) => {
    const { version } = JSON.parse(readFileSync(join(dir, 'node_modules', c.alias, 'package.json'), 'utf8'));
    return `${c.alias}=${version}`;
  });
  console.log(`smoke: installed in ${Date.now() - started} ms: ${versions.join(' ')}`);
}

/**
 * Compiles a strict consumer of the installed declarations (`skipLibCheck: false`, no @types/node)
 * under `node16` resolution, as ESM (index.d.ts) and CommonJS (index.d.cts), and under `bundler`:
 * a declaration only a lenient consumer accepts (TS2515 once, on an abstract member left public)
 * fails here. Throws with the compiler's output.
 */
function typeCheckConsumers(dir) {
  const source = readFileSync(join(root, 'scripts/smoke-types/consumer.ts'), 'utf8');
  const compilerOptions = {
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    target: 'es2022',
    lib: ['es2022', 'dom', 'esnext.disposable'],
    types: [],
  };
  const projects = {
    node16: { module: 'node16', moduleResolution: 'node16', files: ['consumer.mts', 'consumer.cts'] },
    bundler: { module: 'esnext', moduleResolution: 'bundler', files: ['consumer.ts'] },
  };
  for (const file of ['consumer.mts', 'consumer.cts', 'consumer.ts']) writeFileSync(join(dir, file), source);
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  for (const [name, { files, ...resolution }] of Object.entries(projects)) {
    const config = join(dir, `tsconfig.${name}.json`);
    writeFileSync(
      config,
      JSON.stringify({ compilerOptions: { ...compilerOptions, ...resolution }, files }, null, 2),
    );
    execFileSync(process.execPath, [tsc, '-p', config], { cwd: dir, stdio: 'inherit' });
    console.log(`smoke: a strict consumer type-checks (${name} resolution, skipLibCheck: false)`);
  }
}

async function runExample(dir, client, format, url) {
  // A scoped alias names a directory: `@valkey/valkey-glide` runs as `valkey-valkey-glide.mjs`.
  const name = `${client.alias.replace(/^@/, '').replace(/\//g, '-')}.${format}`;
  const source = readFileSync(join(fixtures, `${fixtureOf[client.family]}.${format}`), 'utf8');
  // Only the client's module specifier changes: `from 'redis'` / `require('redis')` → the alias.
  const specifier = new RegExp(`(['"])${client.family}\\1`, 'g');
  writeFileSync(join(dir, name), source.replace(specifier, `'${client.alias}'`));
  const { code, output } = await runNode(dir, name, { ...process.env, REDIS_URL: url });
  const ok = code === 0 && output.trim().endsWith('ok');
  console.log(`${ok ? 'ok' : 'not ok'} - ${client.alias} ${format === 'mjs' ? 'ESM' : 'CommonJS'} (${name})`);
  if (!ok) console.log(output.replace(/^/gm, '    '));
  return { name, ok };
}

function runNode(cwd, file, env) {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [file], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => {
      output += `\n(killed: still running after ${exampleTimeoutMs} ms; was a client left open?)`;
      child.kill('SIGKILL');
    }, exampleTimeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, output });
    });
  });
}

/** A throw-away redis-server on a free loopback port (never 6379), stopped by its PID. */
async function startRedis(dir) {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout.on('data', (chunk) => {
    log += chunk;
  });
  child.stderr.on('data', (chunk) => {
    log += chunk;
  });
  const exited = new Promise((r) => child.once('exit', r));
  child.once('error', (error) => {
    log += `\n${error.message} (is redis-server installed? apt-get install redis-server / brew install redis)`;
  });
  const deadline = Date.now() + 10_000;
  while (!(await ping(port))) {
    if (child.exitCode !== null || child.pid === undefined || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not start on port ${port}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log(`smoke: redis-server pid ${child.pid} on port ${port}`);
  return {
    port,
    async stop() {
      if (child.exitCode === null) process.kill(child.pid, 'SIGKILL');
      await exited;
    },
  };
}

function freePort() {
  return new Promise((resolvePromise, reject) => {
    const probe = createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolvePromise(port));
    });
  });
}

function ping(port) {
  return new Promise((resolvePromise) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(500, () => socket.destroy());
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      socket.end();
      resolvePromise(chunk.toString().startsWith('+PONG'));
    });
    socket.on('error', () => resolvePromise(false));
    socket.on('close', () => resolvePromise(false));
  });
}
