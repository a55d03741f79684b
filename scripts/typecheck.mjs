#!/usr/bin/env node
// `npm run typecheck`: one tsc run over the project (tsconfig.json: sources, tests, bench, examples,
// scripts, demo, tools) and every ```ts block of README.md and docs/*.md (but docs/design.md). Each
// block becomes a module in .tmp/readme/, where the package's own name (package.json `name`, i.e.
// `redis-locksmith`) resolves to src/index.ts; a block that imports node-redis is also checked
// against node-redis 5 and 4. Blocks must be self-contained (their own imports and clients), which
// keeps them copy-pasteable; test/integration/readme.test.ts also runs them. One run rather than
// two: a second tsc loaded and checked the sources and the clients' types again (about 20 s of
// CPU).
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
const project = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
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
    include: [...project.include.map((folder) => `../../${folder}`), './*.ts'],
  }),
);
try {
  execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', join(out, 'tsconfig.json')], { stdio: 'inherit' });
} catch {
  console.error(`type errors above (the README's and docs/' \`\`\`ts examples are in ${out})`);
  process.exit(1);
}
const files = [...new Set(blocks.map((block) => block.file))].join(', ');
console.log(
  `the project and ${blocks.length} TypeScript examples type-check (${modules} with the node-redis variants): ${files}`,
);
