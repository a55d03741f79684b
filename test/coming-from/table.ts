/**
 * Renders the "Coming from…" tables from rows.ts: every row in docs/coming-from.md, the most used
 * peers' first rows (node-redlock, redis-semaphore, Redisson) in the README. The Locksmith code in each cell is the
 * source text of that row's snippets, read with the TypeScript parser, so the table shows exactly
 * the code its check runs; nothing is copied by hand.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import type { AnyRow } from './rows.js';

const here = dirname(fileURLToPath(import.meta.url));
export const rowsFile = join(here, 'rows.ts');
export const readmeFile = join(here, '../../README.md');
export const docsFile = join(here, '../../docs/coming-from.md');

/** The README keeps the rows that open these libraries' groups (bold), and links to the rest. */
const README_LIBRARIES = ['**node-redlock**', '**redis-semaphore**', '**Redisson**'];
const inReadme = (row: AnyRow) => README_LIBRARIES.some((library) => row.youUsed.startsWith(library));

export const TABLE_START =
  '<!-- Generated from test/coming-from/rows.ts, whose checks run each Locksmith snippet against a real Redis. Edit there, then run `node --import tsx test/coming-from/write-readme.ts`. -->';
export const TABLE_END = '<!-- End of the generated table. -->';

/** One row's snippets as written in rows.ts: name → body text. */
export type SnippetSources = ReadonlyMap<string, string>;

/**
 * The snippet bodies of every `defineRow({ snippets: { … } })` call in `source`, in file order.
 * Whitespace runs become one space (a snippet shown inline must be one line).
 */
export function snippetSources(source: string, fileName = rowsFile): SnippetSources[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const found: SnippetSources[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.expression.getText(file) === 'defineRow') {
      const row = node.arguments[0];
      if (!row || !ts.isObjectLiteralExpression(row)) throw new Error('defineRow() takes an object literal');
      found.push(snippetsOf(row, file));
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function snippetsOf(row: ts.ObjectLiteralExpression, file: ts.SourceFile): SnippetSources {
  const property = row.properties.find(
    (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(file) === 'snippets',
  );
  if (!property || !ts.isObjectLiteralExpression(property.initializer)) {
    throw new Error(`a row without a \`snippets\` object literal: ${row.getText(file).slice(0, 80)}`);
  }
  const bodies = new Map<string, string>();
  for (const snippet of property.initializer.properties) {
    const name = snippet.name?.getText(file) ?? '?';
    if (!ts.isPropertyAssignment(snippet) || !ts.isArrowFunction(snippet.initializer)) {
      throw new Error(`snippet \`${name}\` must be an arrow function`);
    }
    const body = snippet.initializer.body;
    // A block body would show `{ … return … }`, and its value would not be what the table shows.
    if (ts.isBlock(body)) throw new Error(`snippet \`${name}\` must have an expression body`);
    bodies.set(name, body.getText(file).replace(/\s+/g, ' '));
  }
  return bodies;
}

/** A snippet as Markdown inline code inside a table cell (`|` would end the cell). */
function inlineCode(code: string): string {
  if (code.includes('`')) throw new Error(`a snippet with a backtick cannot be inline code: ${code}`);
  return `\`${code.replaceAll('|', '\\|')}\``;
}

/** The table, between its markers, from the rows and their snippets' source text. */
export function renderTable(
  rows: readonly AnyRow[],
  sources: readonly SnippetSources[],
  keep: (row: AnyRow) => boolean = () => true,
): string {
  if (rows.length !== sources.length) {
    throw new Error(
      `rows.ts exports ${rows.length} rows but ${sources.length} defineRow() calls were parsed`,
    );
  }
  const lines = rows.flatMap((row, i) => {
    const source = sources[i] as SnippetSources;
    const names = Object.keys(row.snippets);
    if (names.join() !== [...source.keys()].join()) {
      throw new Error(
        `row ${i + 1}: snippets ${names.join()} do not match the parsed ${[...source.keys()].join()}`,
      );
    }
    const code = Object.fromEntries(names.map((name) => [name, inlineCode(source.get(name) as string)]));
    return keep(row) ? [`| ${row.youUsed} | ${row.inLocksmith(code)} |`] : [];
  });
  return [TABLE_START, '', '| you used | in Locksmith |', '|---|---|', ...lines, '', TABLE_END].join('\n');
}

/** A page with its generated table replaced by `table`. */
export function withTable(page: string, table: string): string {
  const start = page.indexOf(TABLE_START);
  const end = page.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error('the page lacks the generated-table markers');
  return page.slice(0, start) + table + page.slice(end + TABLE_END.length);
}

/** Each page with a generated table, and the table it must hold. */
export function currentTables(rows: readonly AnyRow[]): { file: string; table: string }[] {
  const sources = snippetSources(readFileSync(rowsFile, 'utf8'));
  return [
    { file: readmeFile, table: renderTable(rows, sources, inReadme) },
    { file: docsFile, table: renderTable(rows, sources) },
  ];
}
