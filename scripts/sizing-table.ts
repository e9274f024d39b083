/**
 * Prints the README's sizing table (src/budget/plan-request-budget.ts), or with `--write` replaces the table
 * between `<!-- sizing-table -->` and `<!-- /sizing-table -->` in README.md.
 * Run: `node scripts/sizing-table.ts [--write]`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { sizingTable } from '../src/budget/plan-request-budget.ts';

const BEGIN = '<!-- sizing-table -->';
const END = '<!-- /sizing-table -->';
const table = sizingTable().join('\n');
if (process.argv.includes('--write')) {
  const path = new URL('../README.md', import.meta.url);
  const readme = readFileSync(path, 'utf8');
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${BEGIN} … ${END} markers`);
  writeFileSync(path, `${readme.slice(0, start + BEGIN.length)}\n${table}\n${readme.slice(end)}`);
} else {
  console.log(table);
}
