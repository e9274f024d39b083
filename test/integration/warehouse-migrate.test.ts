import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { FolderMigrationProvider, migrateToLatest } from '../../src/warehouse/migrate.ts';
import { openWarehouse } from '../../src/warehouse/open-warehouse.ts';
import { createEmptyDatabase } from '../helpers/pg.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

/** Every migration in migrations/, in order (others add migrations; the tests must not pin a list). */
const allMigrations = async () => Object.keys(await new FolderMigrationProvider().getMigrations()).sort();

describe('migrateToLatest', () => {
  const empty = useTestDatabase(createEmptyDatabase);

  it('applies every migration once; running it again does nothing', async () => {
    expect(await migrateToLatest(empty.warehouse.db)).toEqual(await allMigrations());
    expect(await migrateToLatest(empty.warehouse.db)).toEqual([]);
  });

  it('two processes migrating the same database at once both succeed', async () => {
    const fresh = await createEmptyDatabase();
    const other = await openWarehouse({ databaseUrl: fresh.url, maxConnections: 2 });
    try {
      const results = await Promise.all([migrateToLatest(fresh.warehouse.db), migrateToLatest(other.db)]);
      expect(results.flat()).toEqual(await allMigrations());
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(
        fresh.warehouse.db,
      );
      expect(rows[0]!.n).toBe((await allMigrations()).length);
    } finally {
      await other.close();
      await fresh.drop();
    }
  });
});

describe('the migrated schema', () => {
  const t = useTestDatabase();

  it('has a comment on every table, view and column of validic and validic_sync', async () => {
    const { rows } = await sql<{ relation: string; column: string | null }>`
      select n.nspname || '.' || c.relname as relation, null as column
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('validic', 'validic_sync') and c.relkind in ('r', 'v', 'p')
        and obj_description(c.oid, 'pg_class') is null
      union all
      select n.nspname || '.' || c.relname, a.attname
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname in ('validic', 'validic_sync') and c.relkind in ('r', 'v', 'p')
        and col_description(c.oid, a.attnum) is null`.execute(t.warehouse.db);
    expect(rows).toEqual([]);
  });

  it('has every relation and column the warehouse guide promises', async () => {
    const promised: Record<string, string[]> = {
      users: ['org_id', 'uid', 'user_id', 'timezone', 'country_code', 'created_at', 'updated_at'],
      records: [
        'org_id',
        'id',
        'type',
        'checksum',
        'uid',
        'user_id',
        'source_type',
        'start_time',
        'end_time',
        'utc_offset',
        'created_at',
        'deleted_at',
        'raw',
        'ingested_at',
        'arrived_via',
      ],
      record_metrics: ['org_id', 'record_id', 'type', 'origin', 'unit', 'value'],
      intraday_points: ['org_id', 'record_id', 'metric_type', 'unit', 'time', 'value'],
      connection_events: [
        'org_id',
        'id',
        'action',
        'uid',
        'user_id',
        'source_type',
        'created_at',
        'event_time',
        'deleted_at',
        'deleted_reason',
      ],
      legacy_records: [
        'org_id',
        'object',
        'id',
        'user_id',
        'timestamp',
        'utc_offset',
        'last_updated',
        'source',
        'activity_id',
        'raw',
      ],
      record_versions: ['org_id'],
      nutrition_segments: ['org_id'],
      nutrition_food: ['org_id'],
      legacy_fitness: ['org_id'],
      legacy_routine: ['org_id'],
      legacy_nutrition: ['org_id'],
      legacy_sleep: ['org_id'],
      legacy_weight: ['org_id'],
      legacy_diabetes: ['org_id'],
      legacy_biometrics: ['org_id'],
      legacy_tobacco_cessation: ['org_id'],
    };
    const { rows } = await sql<{ table_name: string; column_name: string }>`
      select table_name, column_name from information_schema.columns where table_schema = 'validic'`.execute(
      t.warehouse.db,
    );
    const have = new Set(rows.map((r) => `${r.table_name}.${r.column_name}`));
    const missing = Object.entries(promised).flatMap(([table, columns]) =>
      columns.filter((c) => !have.has(`${table}.${c}`)).map((c) => `${table}.${c}`),
    );
    expect(missing).toEqual([]);
  });

  it('creates the read-only analyst role with SELECT on validic only', async () => {
    const { rows } = await sql<{ login: boolean; validic: boolean; sync: boolean; future: boolean }>`
      select r.rolcanlogin as login,
             has_table_privilege('validic_analyst', 'validic.records', 'select') as validic,
             has_schema_privilege('validic_analyst', 'validic_sync', 'usage') as sync,
             has_table_privilege('validic_analyst', 'validic.intraday_points', 'select') as future
      from pg_roles r where r.rolname = 'validic_analyst'`.execute(t.warehouse.db);
    expect(rows).toEqual([{ login: false, validic: true, sync: false, future: true }]);
  });

  it('compresses every document column with lz4 (this server has lz4), and stores documents that read back intact', async () => {
    const { rows } = await sql<{ column: string; method: string }>`
      select n.nspname || '.' || c.relname || '.' || a.attname as column, a.attcompression as method
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('validic', 'validic_sync') and c.relkind in ('r', 'p') and a.attname = 'raw'
      order by 1`.execute(t.warehouse.db);
    expect(rows.map((r) => r.column)).toEqual([
      'validic.connection_events.raw',
      'validic.legacy_record_versions.raw',
      'validic.legacy_records.raw',
      'validic.record_versions.raw',
      'validic.records.raw',
      'validic.users.raw',
      'validic_sync.push_notifications.raw',
      'validic_sync.quarantine.raw',
    ]);
    expect(rows.filter((r) => r.method !== 'l')).toEqual([]);

    // A document past the 2 KB at which PostgreSQL compresses: stored compressed with lz4, read back equal.
    const doc = { id: 'lz4-check', points: Array.from({ length: 600 }, (_, i) => ({ t: i, v: i / 7 })) };
    await sql`
      insert into validic.users (org_id, uid, raw) values ('lz4-org', 'lz4-user', ${JSON.stringify(doc)}::jsonb)`.execute(
      t.warehouse.db,
    );
    const stored = await sql<{ method: string; raw: unknown }>`
      select pg_column_compression(raw) as method, raw from validic.users where org_id = 'lz4-org'`.execute(
      t.warehouse.db,
    );
    expect(stored.rows).toEqual([{ method: 'lz4', raw: doc }]);
  });
});
