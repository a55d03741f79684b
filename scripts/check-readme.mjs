#!/usr/bin/env node
// Type-checks every ```ts block of README.md against the sources: each block becomes a module in
// .tmp/readme/, the package's own name (package.json `name`, i.e. `redis-locksmith`) resolves to
// src/index.ts, and tsc must accept them all. Blocks must be self-contained (their own imports and
// clients), which keeps them copy-pasteable; test/integration/readme.test.ts also runs them.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { asModule, readmeBlocks } from './readme-blocks.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, '.tmp/readme');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// Read from package.json so that a rename cannot leave the README importing a name nothing resolves.
const packageName = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name;
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = readmeBlocks(readme);
if (blocks.length === 0) throw new Error('README.md has no ```ts blocks to check');
for (const { index, code } of blocks) {
  // The package name stays: tsconfig `paths` below resolves it, as a user's install would.
  writeFileSync(
    join(out, `block${String(index + 1).padStart(2, '0')}.ts`),
    asModule(code, packageName, packageName),
  );
}

writeFileSync(
  join(out, 'tsconfig.json'),
  JSON.stringify({
    extends: '../../tsconfig.json',
    compilerOptions: {
      noEmit: true,
      rootDir: '../..',
      paths: { [packageName]: ['../../src/index.ts'] },
      noUnusedLocals: false,
    },
    include: ['./*.ts'],
  }),
);
try {
  execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', join(out, 'tsconfig.json')], { stdio: 'inherit' });
} catch {
  console.error(`README.md: a \`\`\`ts example does not type-check (files in ${out})`);
  process.exit(1);
}
console.log(`README.md: ${blocks.length} TypeScript examples type-check`);
