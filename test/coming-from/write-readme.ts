/** Regenerates the README's "Coming from…" table from rows.ts (see table.ts). */
import { readFileSync, writeFileSync } from 'node:fs';
import { rows } from './rows.js';
import { currentTable, readmeFile, withTable } from './table.js';

const readme = readFileSync(readmeFile, 'utf8');
const updated = withTable(readme, currentTable(rows));
writeFileSync(readmeFile, updated);
console.log(updated === readme ? 'README.md: table already up to date' : 'README.md: table regenerated');
