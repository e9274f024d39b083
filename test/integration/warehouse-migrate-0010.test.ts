/**
 * 0010 on a warehouse that already holds data: every record, version and child row of the old
 * unpartitioned schema reads back the same through the relations analysts use, each record in its
 * month's partition; and down and up again.
 */
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { FolderMigrationProvider, migrateToLatest } from '../../src/warehouse/migrate.ts';
import { createEmptyDatabase, migrationsBefore } from '../helpers/pg.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

/** The migrations before 0010 only: the warehouse as it was before it. */
const before = migrationsBefore('0010');

const t = useTestDatabase(createEmptyDatabase);

const RELATIONS = [
  'record_metrics',
  'nutrition_segments',
  'nutrition_segment_metrics',
  'nutrition_food',
  'nutrition_food_metrics',
  'intraday_points',
  'daily_metrics',
  'daily_intraday_totals',
  'latest_blood_pressure',
];

describe('migration 0010', () => {
  // Every migration runs three times here (up to 0009, 0010, down, up): slow on a busy machine.
  it('moves an existing warehouse into monthly partitions with every analyst row unchanged, down and up', {
    timeout: 240_000,
  }, async () => {
    const db = t.warehouse.db;
    await migrateToLatest(db, before);
    const statements = [
      `insert into validic.records (org_id, id, type, checksum, uid, start_time, utc_offset, created_at, raw, arrived_via)
       values ('o', 'm1', 'measurement', 'c2', 'u1', '2024-01-31T23:30:00Z', 3600, '2024-02-01T00:00:00Z', '{"id":"m1"}', 'poll'),
              ('o', 'n1', 'nutrition', 'c1', 'u1', '2024-02-10T12:00:00Z', 0, '2024-02-10T13:00:00Z', '{"id":"n1"}', 'stream'),
              ('o', 'i1', 'intraday', 'c1', 'u1', '2024-02-11T00:00:00Z', -18000, '2024-02-12T00:00:00Z', '{"id":"i1"}', 'poll'),
              ('o', 'x1', 'summary', 'c1', 'u2', null, null, '2024-02-12T00:00:00Z', '{"id":"x1"}', 'poll')`,
      `insert into validic.record_metrics values ('o', 'm1', 0, 'systolic', 'device', 'mmHg', 120),
         ('o', 'm1', 1, 'diastolic', 'device', 'mmHg', 80), ('o', 'm1', 2, 'pulse', null, 'bpm', 61.5),
         ('o', 'n1', 0, 'energy_consumed', 'manual', 'kcal', 512.25), ('o', 'x1', 0, 'steps', null, null, null)`,
      `insert into validic.nutrition_segments values ('o', 'n1', 0, 'breakfast'), ('o', 'n1', 1, null)`,
      `insert into validic.nutrition_segment_metrics values ('o', 'n1', 0, 0, 'fat', 'manual', 'g', 3.5)`,
      `insert into validic.nutrition_food values ('o', 'n1', 0, 0, 'toast', '', 2, 'slice'), ('o', 'n1', 1, 0, 'tea', null, null, null)`,
      `insert into validic.nutrition_food_metrics values ('o', 'n1', 0, 0, 0, 'carbohydrate', 'manual', 'g', 30)`,
      `insert into validic.intraday_series values
         ('o', 'i1', 0, 'steps', 'steps', 'device', '{2024-02-11T00:00:00Z,2024-02-11T00:01:00.250Z,2024-02-11T05:00:00Z}', '{5,0,1e-7}', 1),
         ('o', 'i1', 2, 'distance', 'm', 'device', '{2024-02-11T00:00:00Z}', '{3.25}', 0)`,
      `insert into validic.record_versions (org_id, record_id, checksum, type, created_at, raw, arrived_via)
       values ('o', 'm1', 'c1', 'measurement', '2024-01-31T00:00:00Z', '{"id":"m1","start_time":"2024-01-31T22:00:00Z"}', 'poll')`,
    ];
    for (const s of statements) await sql.raw(s).execute(db);
    // The views since 0010 also give the record's start_time (to prune joins); the rest must be equal.
    // measured_at_local is the user's wall time since 0029 (a timestamp, no longer a timestamptz):
    // compared as its UTC text, which both types give alike.
    const read = async () => {
      const out: Record<string, unknown[]> = {};
      for (const r of RELATIONS) {
        const local =
          r === 'latest_blood_pressure'
            ? `|| jsonb_build_object('measured_at_local', to_char(t.measured_at_local${
                (await localIsTimestamptz()) ? " at time zone 'UTC'" : ''
              }, 'YYYY-MM-DD HH24:MI:SS'))`
            : '';
        out[r] = (
          await sql
            .raw(`select (to_jsonb(t) - 'start_time' ${local})::text as row from validic.${r} t order by 1`)
            .execute(db)
        ).rows;
      }
      return out;
    };
    const localIsTimestamptz = async () =>
      (
        await sql<{ type: string }>`
          select format_type(atttypid, atttypmod) as type from pg_attribute
          where attrelid = 'validic.latest_blood_pressure'::regclass and attname = 'measured_at_local'`.execute(
          db,
        )
      ).rows[0]!.type === 'timestamp with time zone';
    const old = await read();
    expect(old.intraday_points).toHaveLength(4);

    expect(await migrateToLatest(db)).toContain('0010_monthly_partitions');
    expect(await read()).toEqual(old);
    const placed = await sql<{ id: string; partition: string }>`
      select id, tableoid::regclass::text as partition from validic.records order by id`.execute(db);
    expect(placed.rows).toEqual([
      { id: 'i1', partition: 'validic_partitions.records_2024_02' },
      { id: 'm1', partition: 'validic_partitions.records_2024_01' },
      { id: 'n1', partition: 'validic_partitions.records_2024_02' },
      { id: 'x1', partition: 'validic_partitions.records_undated' },
    ]);
    const version = await sql<{ partition: string }>`
      select tableoid::regclass::text as partition from validic.record_versions`.execute(db);
    expect(version.rows).toEqual([{ partition: 'validic_partitions.record_versions_2024_01' }]);

    const previous = Object.keys(await before.getMigrations())
      .sort()
      .at(-1)!;
    const down = await new Migrator({ db, provider: new FolderMigrationProvider() }).migrateTo(previous);
    expect(down.error).toBeUndefined();
    expect(await read()).toEqual(old);
    expect(await migrateToLatest(db)).toContain('0010_monthly_partitions');
    expect(await read()).toEqual(old);
  });
});
