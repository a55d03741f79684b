// The ```ts blocks of README.md, shared by scripts/check-readme.mjs (type-checks them all) and
// test/integration/readme.test.ts (runs them). A block whose first line is a `// not run: <why>`
// comment cannot run on its own (it needs something the test cannot give it); it is still
// type-checked, and the test counts it as skipped, with the reason.

const NOT_RUN = /^\/\/ not run: (.+)$/;

/**
 * @param {string} readme the README's text
 * @returns {{ index: number, code: string, notRunReason: string | undefined }[]}
 */
export function readmeBlocks(readme) {
  return [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match, index) => {
    const code = match[1] ?? '';
    return { index, code, notRunReason: code.split('\n', 1)[0]?.match(NOT_RUN)?.[1] };
  });
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
