/**
 * The monthly partitions of migration 0010 and their upkeep: a batch reaching a new month creates it,
 * `createPartitionsAhead` makes the coming months, and the raw retention empties `raw` of old months
 * while every normalized relation keeps its rows.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { RawItem } from '../../src/pipeline/batch.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { createPartitionsAhead, emptyRawBefore } from '../../src/warehouse/warehouse-upkeep.ts';
import { metric, rawRecord, series } from '../helpers/fixtures/index.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const t = useTestDatabase();

const ORG = 'org-partitions';

function record(id: string, start: string, checksum = 'c1'): RawItem {
  const second = checksum === 'c1' ? 12 : 13;
  return {
    kind: 'record',
    raw: rawRecord(id.startsWith('i') ? 'intraday' : 'measurement', {
      id,
      checksum,
      start_time: start,
      end_time: start,
      created_at: checksum === 'c1' ? '2024-06-01T00:00:00Z' : '2024-06-02T00:00:00Z',
      metrics: id.startsWith('i')
        ? [
            series(
              'steps',
              [
                [start, 10],
                [start.replace('00:00:00', '00:01:00'), second],
              ],
              'steps',
            ),
          ]
        : [metric('body_weight', checksum === 'c1' ? 70 : 71, 'kg')],
    }),
  };
}

const partitionsOf = async () =>
  (
    await sql<{ name: string }>`
      select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'validic.records'::regclass order by 1`.execute(t.warehouse.db)
  ).rows.map((r) => r.name);

const normalizedRows = async () => ({
  metrics: (
    await sql`select record_id, metric_index, type, value from validic.record_metrics
              where org_id = ${ORG} order by 1, 2`.execute(t.warehouse.db)
  ).rows,
  points: (
    await sql`select record_id, time, value from validic.intraday_points
              where org_id = ${ORG} order by 1, 2`.execute(t.warehouse.db)
  ).rows,
});

describe('monthly partitions', () => {
  it('creates the month a batch reaches, routes rows to it, and creates months ahead', async () => {
    const items = [
      record('m1', '2024-01-10T00:00:00Z'),
      record('i1', '2024-02-10T00:00:00Z'),
      record('m2', '2024-03-10T00:00:00Z'),
    ];
    const result = await applyBatch(t.warehouse, { orgId: ORG, arrivedVia: 'poll', items });
    expect(result.inserted).toBe(3);
    expect(await partitionsOf()).toEqual(
      expect.arrayContaining(['records_2024_01', 'records_2024_02', 'records_2024_03', 'records_undated']),
    );
    const routed = await sql<{ id: string; partition: string }>`
      select id, tableoid::regclass::text as partition from validic.records where org_id = ${ORG} order by id`.execute(
      t.warehouse.db,
    );
    expect(routed.rows).toEqual([
      { id: 'i1', partition: 'validic_partitions.records_2024_02' },
      { id: 'm1', partition: 'validic_partitions.records_2024_01' },
      { id: 'm2', partition: 'validic_partitions.records_2024_03' },
    ]);

    await createPartitionsAhead(t.warehouse, new Date('2030-11-20T00:00:00Z'), 2);
    expect(await partitionsOf()).toEqual(
      expect.arrayContaining(['records_2030_11', 'records_2030_12', 'records_2031_01']),
    );
    // Running it again creates nothing.
    expect(await createPartitionsAhead(t.warehouse, new Date('2030-11-20T00:00:00Z'), 2)).toBe(0);
  });

  it('empties raw of months past the retention and keeps every normalized row', async () => {
    const before = await normalizedRows();
    expect(before.metrics).toHaveLength(2);
    expect(before.points).toHaveLength(2);

    // On 2024-04-15 with 1 month kept: raw of January and February goes, March stays.
    const emptied = await emptyRawBefore(t.warehouse, new Date('2024-04-15T00:00:00Z'), 1);
    expect(emptied).toMatchObject({ keptFrom: '2024-03-01', emptied: 2 });
    expect(emptied.months).toEqual(expect.arrayContaining(['2024-01', '2024-02']));
    const raw = await sql<{ id: string; has_raw: boolean; emptied: boolean }>`
      select id, raw is not null as has_raw, raw_emptied_at is not null as emptied from validic.records
      where org_id = ${ORG} order by id`.execute(t.warehouse.db);
    expect(raw.rows).toEqual([
      { id: 'i1', has_raw: false, emptied: true },
      { id: 'm1', has_raw: false, emptied: true },
      { id: 'm2', has_raw: true, emptied: false },
    ]);
    expect(await normalizedRows()).toEqual(before);
    // A rerun finds nothing left to empty.
    expect((await emptyRawBefore(t.warehouse, new Date('2024-04-15T00:00:00Z'), 1)).emptied).toBe(0);
  });

  it('loads a new version of an emptied record: raw is back, the emptied version is archived', async () => {
    const result = await applyBatch(t.warehouse, {
      orgId: ORG,
      arrivedVia: 'stream',
      items: [record('m1', '2024-01-10T00:00:00Z', 'c2')],
    });
    expect(result.updated).toBe(1);
    const row = await sql<{ has_raw: boolean; emptied: boolean }>`
      select raw is not null as has_raw, raw_emptied_at is not null as emptied from validic.records
      where org_id = ${ORG} and id = 'm1'`.execute(t.warehouse.db);
    expect(row.rows).toEqual([{ has_raw: true, emptied: false }]);
    const versions = await sql<{ checksum: string; has_raw: boolean }>`
      select checksum, raw is not null as has_raw from validic.record_versions
      where org_id = ${ORG} and record_id = 'm1'`.execute(t.warehouse.db);
    expect(versions.rows).toEqual([{ checksum: 'c1', has_raw: false }]);
    const metrics = await sql<{ value: number }>`
      select value from validic.record_metrics where org_id = ${ORG} and record_id = 'm1'`.execute(
      t.warehouse.db,
    );
    expect(metrics.rows).toEqual([{ value: 71 }]);
  });

  it('lets an operator drop an old month; a later load into that month creates it again', async () => {
    for (const table of ['records', 'record_versions']) {
      await sql
        .raw(`alter table validic.${table} detach partition validic_partitions.${table}_2024_03`)
        .execute(t.warehouse.db);
      await sql.raw(`drop table validic_partitions.${table}_2024_03`).execute(t.warehouse.db);
    }
    const left = await sql<{ id: string }>`
      select id from validic.records where org_id = ${ORG} order by id`.execute(t.warehouse.db);
    expect(left.rows.map((r) => r.id)).toEqual(['i1', 'm1']);
    // This process still believes March exists: the write fails on the undated partition's CHECK,
    // the loader looks again, creates the month and writes once more.
    const result = await applyBatch(t.warehouse, {
      orgId: ORG,
      arrivedVia: 'poll',
      items: [record('m3', '2024-03-20T00:00:00Z')],
    });
    expect(result.inserted).toBe(1);
    expect(await partitionsOf()).toContain('records_2024_03');
    const placed = await sql<{ partition: string }>`
      select tableoid::regclass::text as partition from validic.records where org_id = ${ORG} and id = 'm3'`.execute(
      t.warehouse.db,
    );
    expect(placed.rows).toEqual([{ partition: 'validic_partitions.records_2024_03' }]);
  });
});
