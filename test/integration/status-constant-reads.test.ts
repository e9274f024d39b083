/**
 * What keeps `status` the same size as the warehouse grows (src/metrics/README.md), against PostgreSQL:
 * a backfill run's ledger sums (validic_sync.backfill_progress, kept by triggers) equal the windows'
 * own aggregates after any sequence of plans, finished windows and deletes, written from several
 * connections at once; the records count is exact up to its limit and the planner's estimate above it,
 * per organization; the newest times are the true maxima. The time it takes is measured in
 * bench/status-at-scale.ts.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { EXACT_COUNT_LIMIT, readOrgDataSummary } from '../../src/warehouse/summaries.ts';
import { summarizeLedger } from '../../src/warehouse/window-ledger.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const ORG = 'org-status';

describe('the backfill ledger in sums', () => {
  const t = useTestDatabase();

  /** One statement on the ledger of run `run`: plan windows, finish some, or delete some. */
  const step = fc.oneof(
    fc.record({
      kind: fc.constant('plan' as const),
      run: fc.integer({ min: 0, max: 2 }),
      from: fc.integer({ min: 0, max: 40 }),
      count: fc.integer({ min: 0, max: 15 }),
    }),
    fc.record({
      kind: fc.constant('finish' as const),
      run: fc.integer({ min: 0, max: 2 }),
      modulo: fc.integer({ min: 1, max: 4 }),
      records: fc.integer({ min: 0, max: 50 }),
    }),
    fc.record({
      kind: fc.constant('reopen' as const),
      run: fc.integer({ min: 0, max: 2 }),
      modulo: fc.integer({ min: 2, max: 5 }),
    }),
    fc.record({
      kind: fc.constant('delete' as const),
      run: fc.integer({ min: 0, max: 2 }),
      modulo: fc.integer({ min: 3, max: 6 }),
    }),
  );
  type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

  async function apply(client: pg.Client, s: Step) {
    const run = `run-${s.run}`;
    if (s.kind === 'plan')
      await client.query(
        `insert into validic_sync.backfill_windows (run_id, window_key, org_id, uid, resource, start_date, end_date)
         select $1, 'w' || n, $2, 'u' || n, 'sleep', '2026-01-01', '2026-01-30' from generate_series($3::int, $4::int) n
         on conflict do nothing`,
        [run, ORG, s.from, s.from + s.count - 1],
      );
    else if (s.kind === 'finish')
      await client.query(
        `update validic_sync.backfill_windows set status = 'done', records = $3, requests = requests + 1, completed_at = now()
         where run_id = $1 and status = 'pending' and substr(window_key, 2)::int % $2 = 0`,
        [run, s.modulo, s.records],
      );
    else if (s.kind === 'reopen')
      await client.query(
        `update validic_sync.backfill_windows set status = 'pending', records = 0
         where run_id = $1 and substr(window_key, 2)::int % $2 = 1`,
        [run, s.modulo],
      );
    else
      await client.query(
        `delete from validic_sync.backfill_windows where run_id = $1 and substr(window_key, 2)::int % $2 = 2`,
        [run, s.modulo],
      );
  }

  it('equal the windows’ aggregates after any sequence of statements from two connections at once', async () => {
    const a = new pg.Client({ connectionString: t.url });
    const b = new pg.Client({ connectionString: t.url });
    await a.connect();
    await b.connect();
    try {
      const db = t.warehouse.db;
      for (const run of ['run-0', 'run-1', 'run-2'])
        await sql`insert into validic_sync.runs (id, org_id, command, args, status)
                  values (${run}, ${ORG}, 'backfill', '{}'::jsonb, 'running')`.execute(db);
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(step, step), { maxLength: 12 }), async (pairs) => {
          await sql`delete from validic_sync.backfill_windows`.execute(db);
          // Two writers at once, each its own backend (its own shard of the sums), on overlapping runs.
          for (const [first, second] of pairs) await Promise.all([apply(a, first), apply(b, second)]);
          for (const run of ['run-0', 'run-1', 'run-2']) {
            const { rows } = await sql<Record<string, number>>`
              select count(*)::float8 as windows, count(*) filter (where status = 'done')::float8 as done,
                coalesce(sum(records), 0)::float8 as records, coalesce(sum(requests), 0)::float8 as requests
              from validic_sync.backfill_windows where run_id = ${run}`.execute(db);
            const w = rows[0]!;
            expect(await summarizeLedger(db, run)).toEqual({
              windows: w.windows,
              done: w.done,
              pending: w.windows! - w.done!,
              records: w.records,
              requests: w.requests,
            });
          }
        }),
        { numRuns: 30 },
      );
      // At most 16 rows a run, whatever the number of statements.
      const { rows } = await sql<{ n: number }>`
        select max(c)::int as n from (select count(*) c from validic_sync.backfill_progress group by run_id) x`.execute(
        db,
      );
      expect(rows[0]!.n).toBeLessThanOrEqual(16);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('a statement that changes nothing writes nothing', async () => {
    const db = t.warehouse.db;
    await sql`insert into validic_sync.runs (id, org_id, command, args, status)
              values ('run-quiet', ${ORG}, 'backfill', '{}'::jsonb, 'running')`.execute(db);
    await sql`insert into validic_sync.backfill_windows (run_id, window_key, org_id, uid, resource, start_date, end_date)
              values ('run-quiet', 'w1', ${ORG}, 'u1', 'sleep', '2026-01-01', '2026-01-30')`.execute(db);
    const before = await sql<{ xmin: string }>`
      select xmin::text from validic_sync.backfill_progress where run_id = 'run-quiet'`.execute(db);
    // A replanned window (conflict) and an update to the same values: no change to the sums' rows.
    await sql`insert into validic_sync.backfill_windows (run_id, window_key, org_id, uid, resource, start_date, end_date)
              values ('run-quiet', 'w1', ${ORG}, 'u1', 'sleep', '2026-01-01', '2026-01-30') on conflict do nothing`.execute(
      db,
    );
    await sql`update validic_sync.backfill_windows set uid = uid where run_id = 'run-quiet'`.execute(db);
    const after = await sql<{ xmin: string }>`
      select xmin::text from validic_sync.backfill_progress where run_id = 'run-quiet'`.execute(db);
    expect(after.rows).toEqual(before.rows);
  });
});

describe('the records of an organization', () => {
  const t = useTestDatabase();

  async function seed(org: string, count: number, ingestedDaysAgo: (n: number) => number) {
    await sql`
      insert into validic.records (org_id, id, type, checksum, uid, start_time, created_at, arrived_via, raw, ingested_at)
      select ${org}, ${org} || '-' || n, 'measurement', 'c', 'u' || (n % 100),
        now() - make_interval(days => n % 20), now() - make_interval(days => n % 20, hours => 1), 'stream', '{}'::jsonb,
        now() - make_interval(days => ${ingestedDaysAgo(0)} + n % 3)
      from generate_series(1, ${count}::int) n`.execute(t.warehouse.db);
  }

  it('are counted exactly up to the limit, estimated from the planner’s statistics above it', async () => {
    const db = t.warehouse.db;
    await sql`select validic_sync.create_month_partitions(date_trunc('month', now() - interval '40 days')::date, date_trunc('month', now())::date)`.execute(
      db,
    );
    const big = Math.round(EXACT_COUNT_LIMIT * 1.6);
    await seed('org-big', big, () => 2);
    await seed('org-small', 5_000, () => 0);
    await sql`vacuum analyze validic.records`.execute(db);

    const small = await readOrgDataSummary(db, 'org-small');
    expect(small).toMatchObject({ records: 5_000, recordsIsEstimate: false });
    const large = await readOrgDataSummary(db, 'org-big');
    expect(large.recordsIsEstimate).toBe(true);
    // The planner's share of org_id per partition: within a few per cent of the truth.
    expect(Math.abs(large.records - big) / big).toBeLessThan(0.05);
    const truth = await sql<{ created: Date; ingested: Date }>`
      select max(created_at) as created, max(ingested_at) as ingested from validic.records where org_id = 'org-big'`.execute(
      db,
    );
    expect(large.newestCreatedAt).toEqual(truth.rows[0]!.created);
    expect(large.newestIngestedAt).toEqual(truth.rows[0]!.ingested);
    expect(await readOrgDataSummary(db, 'org-none')).toMatchObject({
      records: 0,
      recordsIsEstimate: false,
      newestCreatedAt: null,
      newestIngestedAt: null,
    });
  });
});
