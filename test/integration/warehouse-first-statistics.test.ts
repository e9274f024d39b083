/**
 * analyzeNewTables (warehouse-upkeep.ts): a table of the warehouse that was loaded but never analyzed
 * gets its first statistics from the records.recent tick; a table already analyzed, or with few rows,
 * is left to autovacuum.
 */
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { analyzeNewTables } from '../../src/warehouse/warehouse-upkeep.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const t = useTestDatabase();

/** Inserts `count` users on one connection and flushes its statistics (PostgreSQL 15's pgstat). */
async function insertUsers(orgId: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: t.url });
  await client.connect();
  try {
    await client.query(
      `insert into validic.users (org_id, uid, raw)
       select $1, 'uid-' || n, '{}'::jsonb from generate_series(1, $2::int) n`,
      [orgId, count],
    );
    await client.query('select pg_stat_force_next_flush()');
  } finally {
    await client.end(); // a backend flushes what it holds when it exits, too
  }
}

async function usersAnalyzedAt(): Promise<Date | null> {
  const { rows } = await sql<{ at: Date | null }>`
    select coalesce(last_analyze, last_autoanalyze) as at from pg_stat_user_tables
    where schemaname = 'validic' and relname = 'users'`.execute(t.warehouse.db);
  return rows[0]?.at ?? null;
}

/** pg_stat_user_tables is updated by the backends' flushes: wait until it shows the rows. */
async function waitForModifiedRows(atLeast: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await sql<{ n: string }>`
      select n_mod_since_analyze::text as n from pg_stat_user_tables
      where schemaname = 'validic' and relname = 'users'`.execute(t.warehouse.db);
    if (Number(rows[0]?.n ?? 0) >= atLeast) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`pg_stat_user_tables never showed ${atLeast} modified rows of validic.users`);
}

describe('analyzeNewTables', () => {
  it('analyzes a loaded table without statistics once, and leaves small or analyzed tables alone', async () => {
    // Autovacuum, where it is on, must not analyze the table first: the test is about the worker's analyze.
    await sql`alter table validic.users set (autovacuum_enabled = false)`.execute(t.warehouse.db);

    await insertUsers('org-small', 10);
    expect(await analyzeNewTables(t.warehouse)).not.toContain('validic.users');
    expect(await usersAnalyzedAt()).toBeNull();

    await insertUsers('org-large', 2_000);
    await waitForModifiedRows(2_010);
    expect(await analyzeNewTables(t.warehouse)).toContain('validic.users');
    expect(await usersAnalyzedAt()).not.toBeNull();
    const { rows } = await sql<{ n: number }>`
      select reltuples::int as n from pg_class where oid = 'validic.users'::regclass`.execute(t.warehouse.db);
    expect(rows[0]?.n).toBe(2_010);

    // Once analyzed, more rows are autovacuum's business, not the tick's.
    await insertUsers('org-later', 5_000);
    await waitForModifiedRows(5_000);
    expect(await analyzeNewTables(t.warehouse)).not.toContain('validic.users');
  });
});
