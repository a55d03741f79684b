// The ```ts blocks of the user documentation (README.md and docs/*.md but docs/design.md), shared by
// scripts/typecheck.mjs (type-checks them all) and test/integration/readme.test.ts (runs them).
// A block whose first line is a `// not run: <why>` comment cannot run on its own (it needs
// something the test cannot give it); it is still type-checked, and the test counts it as skipped,
// with the reason. A `// → text` comment in a block says what it prints: the test checks that some
// line of its output contains `text`.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const NOT_RUN = /^\/\/ not run: (.+)$/;
const PRINTS = /\/\/ → (.+)$/gm;

/**
 * The documents whose examples users copy: README.md, then every docs/*.md in name order except
 * docs/design.md (design notes about the implementation, not examples to run).
 * @param {string} root the repository's root
 * @returns {string[]} paths relative to `root`
 */
export function exampleFiles(root) {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md') && name !== 'design.md')
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/**
 * @param {string} text a Markdown document's text
 * @returns {{ index: number, code: string, notRunReason: string | undefined, prints: string[] }[]}
 */
export function readmeBlocks(text) {
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match, index) => {
    const code = match[1] ?? '';
    return {
      index,
      code,
      notRunReason: code.split('\n', 1)[0]?.match(NOT_RUN)?.[1],
      prints: [...code.matchAll(PRINTS)].map((m) => (m[1] ?? '').trim()),
    };
  });
}

/**
 * Every example block of every file `exampleFiles` lists, with a file name for it:
 * `README-03`, `docs-api-01`.
 * @param {string} root
 */
export function exampleBlocks(root) {
  return exampleFiles(root).flatMap((file) =>
    readmeBlocks(readFileSync(join(root, file), 'utf8')).map((block) => ({
      ...block,
      file,
      id: `${file.replace(/\.md$/, '').replaceAll('/', '-')}-${String(block.index + 1).padStart(2, '0')}`,
    })),
  );
}

/**
 * The block as written, and, when it imports node-redis (`from 'redis'`, version 6 here), the same
 * code on node-redis 5 and 4 (installed as the aliases `redis5` and `redis4`): a node-redis example
 * must work on every version Locksmith supports.
 * @param {string} code
 * @returns {{ suffix: string, client: string, code: string }[]}
 */
export function clientVariants(code) {
  const asWritten = { suffix: '', client: 'as written', code };
  if (!code.includes("from 'redis'")) return [asWritten];
  return [
    asWritten,
    { suffix: '-redis5', client: 'node-redis 5', code: code.replaceAll("from 'redis'", "from 'redis5'") },
    { suffix: '-redis4', client: 'node-redis 4', code: code.replaceAll("from 'redis'", "from 'redis4'") },
  ];
}

/**
 * The block as a module of its own: the package's name resolves to `target` (the sources, when run
 * from this repository), and `export {}` makes it a module even without imports.
 * @param {string} code
 * @param {string} packageName
 * @param {string} target
 */
export function asModule(code, packageName, target) {
  return `${code.replaceAll(`from '${packageName}'`, `from '${target}'`)}\nexport {};\n`;
}
