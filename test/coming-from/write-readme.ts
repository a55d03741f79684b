/** Regenerates the "Coming from…" tables (README.md and docs/coming-from.md) from rows.ts (see table.ts). */
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { rows } from './rows.js';
import { currentTables, withTable } from './table.js';

for (const { file, table } of currentTables(rows)) {
  const page = readFileSync(file, 'utf8');
  const updated = withTable(page, table);
  writeFileSync(file, updated);
  const name = relative(process.cwd(), file);
  console.log(updated === page ? `${name}: table already up to date` : `${name}: table regenerated`);
}
