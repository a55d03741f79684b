/**
 * The layer rules of docs/design.md §1, enforced: which part of src/ may import which, that lock
 * kinds never see a client library, and that no module imports itself through a cycle. Reads the
 * sources' import lines; nothing runs.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const src = join(import.meta.dirname, '../../src');

/** Plain modules every layer may use: no Redis, no locks. */
const FOUNDATION = [
  'backoff',
  'bounded-call',
  'clock',
  'deadline',
  'deadline-checker',
  'inspect',
  'timing',
  'token',
  'lock-owner',
  'errors',
  'events',
  'give-back',
  'validation',
  'option-hints',
  'options',
  'plan',
];

/** Layer of a module: its folder under src/, or its own name for the top-level files. */
function layerOf(file: string): string {
  const path = relative(src, file);
  const [first] = path.split('/');
  if (path.includes('/')) return first as string;
  const name = (first as string).replace(/\.ts$/, '');
  return FOUNDATION.includes(name) ? 'foundation' : name;
}

/** Which layers each layer may import (besides itself). Data flows one way. */
const ALLOWED: Record<string, readonly string[]> = {
  foundation: [],
  protocol: ['foundation'],
  adapters: ['foundation', 'protocol'],
  lease: ['foundation'],
  waiting: ['foundation', 'adapters'],
  // Below the lease: a batch hands out leases through the maker its caller passes (`LeaseMaker`).
  batching: ['foundation'],
  primitives: ['foundation', 'protocol', 'adapters', 'lease', 'waiting', 'batching'],
  redlock: ['foundation', 'protocol', 'adapters', 'lease', 'waiting', 'batching', 'primitives'],
  fencing: ['foundation', 'protocol', 'adapters'],
  compat: ['foundation', 'primitives', 'lease', 'adapters'],
  // The `locksmith` command uses the public API only, imported by the package's name.
  cli: [],
  index: [
    'foundation',
    'batching',
    'protocol',
    'adapters',
    'lease',
    'waiting',
    'primitives',
    'redlock',
    'compat',
    'fencing',
  ],
};

/** The only adapter modules code outside adapters/ may name (the client libraries stay behind them). */
const ADAPTER_SURFACE = ['client-context', 'client-types', 'run-script', 'subscriber-hub'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The modules a file imports; with `runtimeOnly`, leaving out `import type` (erased at build). */
function importsOf(file: string, runtimeOnly = false): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(import type |import |export )(?:[^'"]*from )?'(\.[^']+)'/gm)]
    .filter((m) => !(runtimeOnly && m[1] === 'import type '))
    .map((m) => resolve(dirname(file), (m[2] as string).replace(/\.js$/, '.ts')));
}

const files = sources(src);
const graph = new Map(files.map((file) => [file, importsOf(file)]));
const runtimeGraph = new Map(files.map((file) => [file, importsOf(file, true)]));

test('every layer imports only the layers below it', () => {
  const broken: string[] = [];
  for (const [file, imports] of graph) {
    const from = layerOf(file);
    const allowed = ALLOWED[from];
    assert.ok(
      allowed,
      `${relative(src, file)}: layer ${from} is not in the table (add it to docs/design.md §1 too)`,
    );
    for (const target of imports) {
      const to = layerOf(target);
      if (to !== from && !allowed.includes(to))
        broken.push(`${relative(src, file)} → ${relative(src, target)}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('outside adapters/, only the adapter surface is imported; lock kinds see no adapter at all', () => {
  const broken: string[] = [];
  for (const [file, imports] of graph) {
    const from = layerOf(file);
    for (const target of imports.filter((t) => layerOf(t) === 'adapters' && from !== 'adapters')) {
      const name = relative(join(src, 'adapters'), target).replace(/\.ts$/, '');
      if (!ADAPTER_SURFACE.includes(name)) broken.push(`${relative(src, file)} → adapters/${name}`);
    }
  }
  // A lock kind (a class built on ScriptedLock) names protocol calls, never a client or a driver:
  // only the shell layers (lock-shell, scripted-lock) and the waiting loop touch adapters.
  const kinds = ['mutex', 'fair-mutex', 'reentrant-mutex', 'semaphore', 'read-write-lock'];
  for (const kind of kinds.map((name) => `primitives/${name}.ts`)) {
    for (const target of graph.get(join(src, kind)) ?? []) {
      const name = relative(src, target);
      if (layerOf(target) === 'adapters' && name !== 'adapters/client-types.ts')
        broken.push(`${kind} → ${name}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('the waiting loop knows no lock kind, no client and no error class of one kind', () => {
  // It sees a plan, the kind's attempts and a wake (waiting/wake.ts holds the hubs), nothing else.
  const loop = join(src, 'waiting/loop.ts');
  const broken = (graph.get(loop) ?? [])
    .filter((target) => !['foundation', 'lease'].includes(layerOf(target)))
    .filter((target) => !['waiting/attempts.ts', 'waiting/wake.ts'].includes(relative(src, target)))
    .map((target) => relative(src, target));
  assert.deepEqual(broken, []);
  const text = readFileSync(loop, 'utf8');
  assert.doesNotMatch(text, /QuorumError|PermitsOverLimitError|SubscriberHub|Redlock|Semaphore|Mutex/);
});

test('no import cycles at run time', () => {
  const state = new Map<string, 'visiting' | 'done'>();
  const cycles: string[] = [];
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'visiting') {
      cycles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(src, f)).join(' → '));
      return;
    }
    state.set(file, 'visiting');
    for (const target of runtimeGraph.get(file) ?? []) visit(target, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of files) visit(file, []);
  assert.deepEqual(cycles, []);
});
