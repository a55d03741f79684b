#!/usr/bin/env node
// Type-checks every ```ts block of README.md and docs/*.md (but docs/design.md) against the sources:
// each block becomes a module in .tmp/readme/, the package's own name (package.json `name`, i.e.
// `redis-locksmith`) resolves to src/index.ts, and tsc must accept them all. A block that imports
// node-redis is also checked against node-redis 5 and 4. Blocks must be self-contained (their own
// imports and clients), which keeps them copy-pasteable; test/integration/readme.test.ts also runs
// them.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { asModule, clientVariants, exampleBlocks } from './readme-blocks.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, '.tmp/readme');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// Read from package.json so that a rename cannot leave the README importing a name nothing resolves.
const packageName = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name;
const blocks = exampleBlocks(root);
if (!blocks.some((block) => block.file === 'README.md'))
  throw new Error('README.md has no ```ts blocks to check');
let modules = 0;
for (const { id, code } of blocks) {
  for (const variant of clientVariants(code)) {
    // The package name stays: tsconfig `paths` below resolves it, as a user's install would.
    writeFileSync(join(out, `${id}${variant.suffix}.ts`), asModule(variant.code, packageName, packageName));
    modules += 1;
  }
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
  console.error(`README.md or docs/: a \`\`\`ts example does not type-check (files in ${out})`);
  process.exit(1);
}
const files = [...new Set(blocks.map((block) => block.file))].join(', ');
console.log(
  `${blocks.length} TypeScript examples type-check (${modules} with the node-redis variants): ${files}`,
);
