/**
 * The analyst guide: docs/warehouse.md is what the generator makes from the schema, and every example
 * query in it runs, as the read-only analyst role, against a warehouse filled from the sandbox.
 */
import { readFile } from 'node:fs/promises';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindExample, EXAMPLE_QUERIES } from '../../src/docs/example-queries.ts';
import { generateDocs } from '../../src/docs/generate-warehouse-guide.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { day } from '../helpers/fixtures/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

describe('warehouse guide', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  /** The user and month the bounded examples run for: one that has steps, blood pressure and meals. */
  let bound: { orgId: string; uid: string; month: string };

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 3, users: 4, days: 14 });
    db = await createTestDatabase();
    const to = day(0);
    const from = day(40);
    const result = await runCli(
      ['backfill', '--from', from, '--to', to],
      sandboxEnv(sandbox, { DATABASE_URL: db.url }),
    );
    expect(result.code, result.stderr).toBe(0);
    // One record updated and one deleted, so the versions/deletes example has something to show.
    const [first, second] = sandbox.truth.records({ type: 'measurement' });
    sandbox.control.updateRecord(first!.id);
    sandbox.control.deleteRecord(second!.id);
    const again = await runCli(
      ['backfill', '--from', from, '--to', to],
      sandboxEnv(sandbox, { DATABASE_URL: db.url }),
    );
    expect(again.code, again.stderr).toBe(0);
    const { rows } = await sql<{ orgId: string; uid: string; month: string }>`
      select r.org_id as "orgId", r.uid, to_char(date_trunc('month', r.start_time), 'YYYY-MM-DD') as month
      from validic.records r
      where r.deleted_at is null
      group by 1, 2, 3
      having count(*) filter (where r.type = 'nutrition') > 0
        and bool_or(exists (select 1 from validic.intraday_series s
          where s.org_id = r.org_id and s.record_id = r.id and s.metric_type = 'steps'))
        and bool_or(exists (select 1 from validic.record_metrics m
          where m.org_id = r.org_id and m.record_id = r.id and m.type = 'systolic'))
      order by count(*) desc, 1, 2, 3
      limit 1`.execute(db.warehouse.db);
    expect(rows).toHaveLength(1);
    bound = rows[0]!;
  });
  afterAll(async () => {
    await sandbox?.close();
    await db?.drop();
  });

  it('and the dbt sources are current with the schema', async () => {
    for (const [path, content] of Object.entries(await generateDocs())) {
      const committed = await readFile(new URL(`../../${path}`, import.meta.url), 'utf8');
      expect(committed, path).toBe(content);
    }
  });

  it.each(EXAMPLE_QUERIES.map((q) => [q.title, q] as const))(
    'example query runs as the analyst: %s',
    async (_title, query) => {
      const rows = await db.warehouse.db.transaction().execute(async (tx) => {
        await sql`set local role validic_analyst`.execute(tx);
        return (await sql.raw(bindExample(query, bound).replace(/;\s*$/, '')).execute(tx)).rows;
      });
      expect(rows.length).toBeGreaterThan(0);
    },
  );

  it('does not let the analyst role write', async () => {
    await expect(
      db.warehouse.db.transaction().execute(async (tx) => {
        await sql`set local role validic_analyst`.execute(tx);
        await sql`delete from validic.records`.execute(tx);
      }),
    ).rejects.toThrow(/permission denied/);
  });
});
