import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCursors } from '../../src/warehouse/cursors.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { FolderMigrationProvider, migrateToLatest } from '../../src/warehouse/migrate.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { rawRecord, series } from '../helpers/fixtures/index.ts';

/** Every migration in migrations/, in order (others add migrations; the tests must not pin a list). */
const allMigrations = async () => Object.keys(await new FolderMigrationProvider().getMigrations()).sort();

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'validic-pglite-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const record = (id: string, checksum: string, createdAt: string, steps: number[]) =>
  rawRecord('intraday', {
    id,
    checksum,
    start_time: '2024-06-01T00:00:00Z',
    end_time: '2024-06-01T23:59:59Z',
    granularity: { interval: 1, unit: 'minutes' },
    metrics: [
      series(
        'steps',
        steps.map((value, i) => [`2024-06-01T00:0${i}:00Z`, value]),
        'steps',
      ),
    ],
    created_at: createdAt,
  });

describe('embedded PGlite warehouse', () => {
  it('runs the same migrations and loads batches with the same dedupe rules, persisted on disk', async () => {
    let wh: Warehouse = await openWarehouse({ dataDir: dir });
    expect(wh.kind).toBe('pglite');
    try {
      expect(await migrateToLatest(wh.db)).toEqual(await allMigrations());
      expect(await migrateToLatest(wh.db)).toEqual([]);
      const first = await applyBatch(
        wh,
        {
          orgId: 'o',
          arrivedVia: 'stream',
          items: [
            { kind: 'record', raw: record('i1', 'c1', '2024-06-01T01:00:00Z', [1, 2, 3]) },
            { kind: 'record', raw: record('i1', 'c2', '2024-06-01T02:00:00Z', [4, 5]) },
            { kind: 'record', raw: { id: 'broken' } },
            {
              kind: 'legacy',
              object: 'weight',
              raw: { _id: 'w1', timestamp: '2024-06-01T00:00:00Z', weight: 70 },
            },
          ],
        },
        { cursors: [{ key: 'stream', value: { at: '2024-06-01T02:00:00Z' } }] },
      );
      expect(first).toMatchObject({ inserted: 2, stale: 1, quarantined: 1 });
      const again = await applyBatch(wh, {
        orgId: 'o',
        arrivedVia: 'replay',
        items: [{ kind: 'record', raw: record('i1', 'c1', '2024-06-01T01:00:00Z', [1, 2, 3]) }],
      });
      expect(again).toMatchObject({ stale: 1, inserted: 0, updated: 0 });
      // Queries issued concurrently with a load wait for it instead of joining its transaction.
      await Promise.all([
        applyBatch(wh, {
          orgId: 'o',
          arrivedVia: 'poll',
          items: [{ kind: 'record', raw: record('i2', 'c1', '2024-06-01T01:00:00Z', [9]) }],
        }),
        wh.db.selectFrom('validic.records').select('id').execute(),
      ]);
    } finally {
      await wh.close();
    }

    wh = await openWarehouse({ dataDir: dir });
    try {
      const points = await wh.db
        .selectFrom('validic.intraday_points')
        .select(['record_id', 'value'])
        .where('org_id', '=', 'o')
        .orderBy('record_id')
        .orderBy('time')
        .execute();
      expect(points).toEqual([
        { record_id: 'i1', value: 4 },
        { record_id: 'i1', value: 5 },
        { record_id: 'i2', value: 9 },
      ]);
      const versions = await wh.db.selectFrom('validic.record_versions').select('checksum').execute();
      expect(versions).toEqual([{ checksum: 'c1' }]);
      expect((await listCursors(wh.db, 'o', 'stream')).map((c) => [c.key, c.value])).toEqual([
        ['stream', { at: '2024-06-01T02:00:00Z' }],
      ]);
      const weight = await wh.db.selectFrom('validic.legacy_weight').select(['id', 'raw']).execute();
      expect(weight).toEqual([
        { id: 'w1', raw: { _id: 'w1', timestamp: '2024-06-01T00:00:00Z', weight: 70 } },
      ]);
    } finally {
      await wh.close();
    }
  });
});
