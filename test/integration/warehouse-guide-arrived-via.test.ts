/**
 * The warehouse guide's "How a row arrived" names every value `arrived_via` may hold: the values are read
 * from the schema's own check constraint, so a path added by a migration (as `reconcile` and `audit`
 * were) cannot go unexplained.
 */
import { readFile } from 'node:fs/promises';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/use-test-database.ts';

describe('the warehouse guide', () => {
  const db = useTestDatabase();

  it('explains every value of arrived_via', async () => {
    const { rows } = await sql<{ definition: string }>`
      select pg_get_constraintdef(c.oid) as definition
      from pg_constraint c join pg_class t on t.oid = c.conrelid join pg_namespace n on n.oid = t.relnamespace
      where n.nspname = 'validic' and t.relname = 'records' and c.contype = 'c'
        and pg_get_constraintdef(c.oid) like '%arrived_via%'`.execute(db.warehouse.db);
    expect(rows).toHaveLength(1);
    const values = [...rows[0]!.definition.matchAll(/'([a-z]+)'::text/g)].map((m) => m[1]!);
    expect(values).toContain('stream');
    const intro = await readFile(new URL('../../src/docs/warehouse-guide-intro.md', import.meta.url), 'utf8');
    const bullet = /- \*\*How a row arrived\.\*\*[\s\S]*?(?=\n- \*\*)/.exec(intro)![0];
    const missing = values.filter((value) => !bullet.includes(`\`${value}\``));
    expect(missing).toEqual([]);
  });
});
