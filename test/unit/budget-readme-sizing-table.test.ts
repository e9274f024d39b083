/**
 * The README's sizing table is the planner's: regenerate it with `node scripts/sizing-table.ts --write`
 * whenever the planner or its defaults change.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sizingTable } from '../../src/budget/plan-request-budget.ts';

describe('README sizing table', () => {
  it('matches what the budget planner computes', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const table = readme.split('<!-- sizing-table -->')[1]?.split('<!-- /sizing-table -->')[0]?.trim();
    expect(table).toBe(sizingTable().join('\n'));
  });

  it('shows the issue example: 3,000 users × 7 resources are swept every 12.5 hours, not hourly', () => {
    expect(sizingTable().find((row) => row.startsWith('| 3,000 |'))).toContain('12.5 h');
  });
});
