import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Batch, RawItem } from '../../src/pipeline/batch.ts';
import { listCursors } from '../../src/warehouse/cursors.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { metric, rawRecord } from '../helpers/fixtures/index.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const t = useTestDatabase();

let orgSeq = 0;
const newOrg = () => `org-dedupe-${++orgSeq}`;

function measurement(
  id: string,
  checksum: string,
  createdAt: string,
  weight: number,
  extra: Record<string, unknown> = {},
) {
  return rawRecord('measurement', {
    id,
    checksum,
    utc_offset: -18000,
    log_id: `log-${id}`,
    source: { type: 'withings', device: { name: 'Body+', type: 'scale' } },
    metrics: [metric('body_weight', weight, 'kg'), metric('bmi', 22.5, 'kg/m2')],
    created_at: createdAt,
    ...extra,
  });
}

const records = (orgId: string, raws: unknown[], arrivedVia: Batch['arrivedVia'] = 'poll'): Batch => ({
  orgId,
  arrivedVia,
  items: raws.map((raw): RawItem => ({ kind: 'record', raw })),
});

async function current(orgId: string, id: string) {
  return t.warehouse.db
    .selectFrom('validic.records')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
}

async function versions(orgId: string, id: string) {
  const rows = await t.warehouse.db
    .selectFrom('validic.record_versions')
    .select('checksum')
    .where('org_id', '=', orgId)
    .where('record_id', '=', id)
    .orderBy('checksum')
    .execute();
  return rows.map((r) => r.checksum);
}

/** Every kept version of an id, oldest first: `checksum created_at` and ` deleted` when it was. */
async function history(orgId: string, id: string) {
  const rows = await t.warehouse.db
    .selectFrom('validic.record_versions')
    .select(['checksum', 'created_at', 'deleted_at'])
    .where('org_id', '=', orgId)
    .where('record_id', '=', id)
    .orderBy('created_at')
    .orderBy('checksum')
    .execute();
  return rows.map(
    (r) => `${r.checksum} ${r.created_at.toISOString().slice(0, 10)}${r.deleted_at ? ' deleted' : ''}`,
  );
}

async function metricValues(orgId: string, id: string) {
  const rows = await t.warehouse.db
    .selectFrom('validic.record_metrics')
    .select(['type', 'value'])
    .where('org_id', '=', orgId)
    .where('record_id', '=', id)
    .orderBy('metric_index')
    .execute();
  return rows.map((r) => `${r.type}=${r.value}`);
}

describe('applyBatch dedupe rules', () => {
  it('inserts a new record with its metrics and moves the cursor in the same transaction', async () => {
    const org = newOrg();
    const result = await applyBatch(
      t.warehouse,
      records(org, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70)]),
      {
        cursors: [{ key: 'poll:u1', value: { through: '2024-03-01' } }],
      },
    );
    expect(result).toMatchObject({ inserted: 1, updated: 0, unchanged: 0, stale: 0, quarantined: 0 });
    expect(result.byType.measurement?.inserted).toBe(1);
    expect(result.newestCreatedAt).toBe('2024-03-01T09:00:00.000Z');
    const row = await current(org, 'r1');
    expect(row).toMatchObject({
      type: 'measurement',
      checksum: 'c1',
      uid: 'u1',
      user_id: 'svc-u1',
      utc_offset: -18000,
    });
    expect(row?.source_type).toBe('withings');
    expect(row?.arrived_via).toBe('poll');
    expect(row?.start_time?.toISOString()).toBe('2024-03-01T08:00:00.000Z');
    expect(await metricValues(org, 'r1')).toEqual(['body_weight=70', 'bmi=22.5']);
    expect((await listCursors(t.warehouse.db, org, 'poll:u1')).map((c) => c.value)).toEqual([
      { through: '2024-03-01' },
    ]);
  });

  it('same id and checksum is a no-op counted unchanged', async () => {
    const org = newOrg();
    const raw = measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70);
    await applyBatch(t.warehouse, records(org, [raw]));
    const before = await current(org, 'r1');
    const result = await applyBatch(t.warehouse, records(org, [raw, raw], 'stream'));
    expect(result).toMatchObject({ inserted: 0, updated: 0, unchanged: 2, stale: 0 });
    const after = await current(org, 'r1');
    expect(after?.arrived_via).toBe('poll');
    expect(after?.updated_at).toEqual(before?.updated_at);
    expect(await versions(org, 'r1')).toEqual([]);
  });

  it('a later created_at with a new checksum replaces the record, keeps the old version and its new metrics', async () => {
    const org = newOrg();
    await applyBatch(t.warehouse, records(org, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70)]));
    const result = await applyBatch(
      t.warehouse,
      records(org, [measurement('r1', 'c2', '2024-03-02T09:00:00Z', 71)], 'stream'),
    );
    expect(result).toMatchObject({ inserted: 0, updated: 1, unchanged: 0, stale: 0 });
    expect((await current(org, 'r1'))?.checksum).toBe('c2');
    expect((await current(org, 'r1'))?.arrived_via).toBe('stream');
    expect(await versions(org, 'r1')).toEqual(['c1']);
    expect(await metricValues(org, 'r1')).toEqual(['body_weight=71', 'bmi=22.5']);
  });

  it('an older version arriving late never overwrites the newer one; it is counted stale and kept', async () => {
    const org = newOrg();
    await applyBatch(t.warehouse, records(org, [measurement('r1', 'c2', '2024-03-02T09:00:00Z', 71)]));
    const result = await applyBatch(
      t.warehouse,
      records(org, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70)], 'replay'),
    );
    expect(result).toMatchObject({ inserted: 0, updated: 0, stale: 1 });
    expect((await current(org, 'r1'))?.checksum).toBe('c2');
    expect(await versions(org, 'r1')).toEqual(['c1']);
    expect(await metricValues(org, 'r1')).toEqual(['body_weight=71', 'bmi=22.5']);
    // The same stale version again: nothing new.
    const again = await applyBatch(
      t.warehouse,
      records(org, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70)]),
    );
    expect(again.stale).toBe(1);
    expect(await versions(org, 'r1')).toEqual(['c1']);
  });

  it('equal created_at: the greater checksum wins whatever the order', async () => {
    const a = newOrg();
    const b = newOrg();
    const low = measurement('r1', 'aaa', '2024-03-01T09:00:00Z', 70);
    const high = measurement('r1', 'bbb', '2024-03-01T09:00:00Z', 72);
    await applyBatch(t.warehouse, records(a, [low]));
    await applyBatch(t.warehouse, records(a, [high]));
    await applyBatch(t.warehouse, records(b, [high]));
    await applyBatch(t.warehouse, records(b, [low]));
    expect((await current(a, 'r1'))?.checksum).toBe('bbb');
    expect((await current(b, 'r1'))?.checksum).toBe('bbb');
    expect(await versions(a, 'r1')).toEqual(['aaa']);
    expect(await versions(b, 'r1')).toEqual(['aaa']);
  });

  it('within one batch only the newest version per id is applied; the others are kept as versions', async () => {
    const org = newOrg();
    const result = await applyBatch(
      t.warehouse,
      records(org, [
        measurement('r1', 'c2', '2024-03-02T09:00:00Z', 71),
        measurement('r1', 'c3', '2024-03-03T09:00:00Z', 72),
        measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70),
      ]),
    );
    expect(result).toMatchObject({ inserted: 1, stale: 2 });
    expect((await current(org, 'r1'))?.checksum).toBe('c3');
    expect(await versions(org, 'r1')).toEqual(['c1', 'c2']);
    expect(await metricValues(org, 'r1')).toEqual(['body_weight=72', 'bmi=22.5']);
  });

  it('deleted_at set: the row stays, marked deleted', async () => {
    const org = newOrg();
    await applyBatch(t.warehouse, records(org, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70)]));
    await applyBatch(
      t.warehouse,
      records(org, [
        measurement('r1', 'c2', '2024-03-02T09:00:00Z', 70, { deleted_at: '2024-03-02T09:00:00Z' }),
      ]),
    );
    const row = await current(org, 'r1');
    expect(row?.deleted_at?.toISOString()).toBe('2024-03-02T09:00:00.000Z');
  });

  describe('a delete that keeps the checksum (the checksum need not cover deleted_at)', () => {
    const live = (createdAt: string) => measurement('r1', 'c1', createdAt, 70);
    const deleted = (createdAt: string) =>
      measurement('r1', 'c1', createdAt, 70, { deleted_at: '2024-03-02T09:00:00Z' });

    it('wins over the stored version, once; the same delete again writes nothing', async () => {
      const org = newOrg();
      await applyBatch(t.warehouse, records(org, [live('2024-03-01T09:00:00Z')]));
      const first = await applyBatch(t.warehouse, records(org, [deleted('2024-03-02T09:00:00Z')]));
      expect(first).toMatchObject({ updated: 1, unchanged: 0 });
      const row = await current(org, 'r1');
      expect(row?.deleted_at?.toISOString()).toBe('2024-03-02T09:00:00.000Z');
      expect(row?.created_at.toISOString()).toBe('2024-03-02T09:00:00.000Z');
      // The version before the delete is kept.
      expect(await history(org, 'r1')).toEqual(['c1 2024-03-01']);
      expect(await metricValues(org, 'r1')).toEqual(['body_weight=70', 'bmi=22.5']);

      const ctid = async () =>
        (
          await sql<{ ctid: string }>`select ctid::text from validic.records where org_id = ${org}`.execute(
            t.warehouse.db,
          )
        ).rows[0]?.ctid;
      const before = await ctid();
      const again = await applyBatch(t.warehouse, records(org, [deleted('2024-03-02T09:00:00Z')]));
      expect(again).toMatchObject({ updated: 0, unchanged: 1 });
      // The live version arriving late (a replay) does not bring the record back.
      const late = await applyBatch(t.warehouse, records(org, [live('2024-03-01T09:00:00Z')]));
      expect(late).toMatchObject({ updated: 0, inserted: 0, stale: 1 });
      expect(await ctid()).toBe(before);
      expect((await current(org, 'r1'))?.deleted_at).not.toBeNull();
      expect(await history(org, 'r1')).toEqual(['c1 2024-03-01']);
    });

    it('a revival (the same checksum, deleted_at null, a later created_at) makes the record current again, keeping every version', async () => {
      const org = newOrg();
      const revived = live('2024-03-03T09:00:00Z');
      await applyBatch(t.warehouse, records(org, [live('2024-03-01T09:00:00Z')]));
      await applyBatch(t.warehouse, records(org, [deleted('2024-03-02T09:00:00Z')], 'stream'));
      const result = await applyBatch(t.warehouse, records(org, [revived], 'stream'));
      expect(result).toMatchObject({ updated: 1, unchanged: 0, stale: 0 });
      const row = await current(org, 'r1');
      expect(row?.deleted_at).toBeNull();
      expect(row?.created_at.toISOString()).toBe('2024-03-03T09:00:00.000Z');
      expect(await history(org, 'r1')).toEqual(['c1 2024-03-01', 'c1 2024-03-02 deleted']);
      // The analyst views show it again.
      expect(await metricValues(org, 'r1')).toEqual(['body_weight=70', 'bmi=22.5']);
      const daily = await sql<{ readings: number }>`
        select readings from validic.daily_metrics where org_id = ${org} and metric_type = 'body_weight'`.execute(
        t.warehouse.db,
      );
      expect(daily.rows).toEqual([{ readings: 1 }]);

      // Any order of the three ends the same, and redelivering them all changes nothing.
      const all = [live('2024-03-01T09:00:00Z'), deleted('2024-03-02T09:00:00Z'), revived];
      for (const order of [
        [2, 1, 0],
        [1, 2, 0],
        [0, 2, 1],
      ]) {
        const other = newOrg();
        for (const i of order) await applyBatch(t.warehouse, records(other, [all[i]!]));
        expect((await current(other, 'r1'))?.deleted_at).toBeNull();
        expect(await history(other, 'r1')).toEqual(['c1 2024-03-01', 'c1 2024-03-02 deleted']);
      }
      const together = newOrg();
      await applyBatch(t.warehouse, records(together, all));
      expect(await history(together, 'r1')).toEqual(['c1 2024-03-01', 'c1 2024-03-02 deleted']);
      expect(await applyBatch(t.warehouse, records(together, all))).toMatchObject({
        updated: 0,
        inserted: 0,
        unchanged: 1,
        stale: 2,
      });
      expect(await history(together, 'r1')).toEqual(['c1 2024-03-01', 'c1 2024-03-02 deleted']);
    });

    it("an audit batch takes the platform's version at the same created_at, whatever the checksums' order", async () => {
      const org = newOrg();
      await applyBatch(t.warehouse, records(org, [measurement('r1', 'zzz', '2024-03-01T09:00:00Z', 70)]));
      // Not from the audit: the greater checksum stays.
      const poll = await applyBatch(
        t.warehouse,
        records(org, [measurement('r1', 'aaa', '2024-03-01T09:00:00Z', 71)], 'poll'),
      );
      expect(poll).toMatchObject({ updated: 0, stale: 1 });
      expect((await current(org, 'r1'))?.checksum).toBe('zzz');
      const audit = await applyBatch(
        t.warehouse,
        records(org, [measurement('r1', 'aaa', '2024-03-01T09:00:00Z', 71)], 'audit'),
      );
      expect(audit).toMatchObject({ updated: 1, stale: 0 });
      expect((await current(org, 'r1'))?.checksum).toBe('aaa');
      expect((await current(org, 'r1'))?.arrived_via).toBe('audit');
      expect(await history(org, 'r1')).toEqual(['zzz 2024-03-01']);
      // An older version is not taken, even from the audit.
      const older = await applyBatch(
        t.warehouse,
        records(org, [measurement('r1', 'bbb', '2024-02-28T09:00:00Z', 72)], 'audit'),
      );
      expect(older).toMatchObject({ updated: 0, stale: 1 });
      expect((await current(org, 'r1'))?.checksum).toBe('aaa');
    });

    it('wins with the same created_at too, in either arrival order and within one batch', async () => {
      for (const order of [
        [live('2024-03-01T09:00:00Z'), deleted('2024-03-01T09:00:00Z')],
        [deleted('2024-03-01T09:00:00Z'), live('2024-03-01T09:00:00Z')],
      ]) {
        const apart = newOrg();
        for (const raw of order) await applyBatch(t.warehouse, records(apart, [raw]));
        expect((await current(apart, 'r1'))?.deleted_at).not.toBeNull();
        const together = newOrg();
        await applyBatch(t.warehouse, records(together, order));
        expect((await current(together, 'r1'))?.deleted_at).not.toBeNull();
      }
    });

    it('an older delete never overwrites a newer version', async () => {
      const org = newOrg();
      await applyBatch(t.warehouse, records(org, [live('2024-03-03T09:00:00Z')]));
      const result = await applyBatch(t.warehouse, records(org, [deleted('2024-03-02T09:00:00Z')]));
      expect(result).toMatchObject({ updated: 0 });
      const row = await current(org, 'r1');
      expect(row?.deleted_at).toBeNull();
      expect(row?.created_at.toISOString()).toBe('2024-03-03T09:00:00.000Z');
      // Nor one of another checksum.
      await applyBatch(
        t.warehouse,
        records(org, [
          measurement('r1', 'c0', '2024-03-02T10:00:00Z', 69, { deleted_at: '2024-03-02T10:00:00Z' }),
        ]),
      );
      expect((await current(org, 'r1'))?.deleted_at).toBeNull();
    });
  });

  it('rewrites only changed records (their metrics are columns of the same row)', async () => {
    const org = newOrg();
    await applyBatch(
      t.warehouse,
      records(org, [
        measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70),
        measurement('r2', 'c1', '2024-03-01T09:00:00Z', 80),
      ]),
    );
    const ctidBefore = await sql<{ ctid: string }>`
      select ctid::text, metrics::text from validic.records where org_id = ${org} and id = 'r2'`.execute(
      t.warehouse.db,
    );
    expect(ctidBefore.rows).toHaveLength(1);
    await applyBatch(
      t.warehouse,
      records(org, [
        measurement('r1', 'c2', '2024-03-02T09:00:00Z', 71),
        measurement('r2', 'c1', '2024-03-01T09:00:00Z', 80),
      ]),
    );
    const ctidAfter = await sql<{ ctid: string }>`
      select ctid::text, metrics::text from validic.records where org_id = ${org} and id = 'r2'`.execute(
      t.warehouse.db,
    );
    expect(ctidAfter.rows).toEqual(ctidBefore.rows);
    expect(await metricValues(org, 'r1')).toEqual(['body_weight=71', 'bmi=22.5']);
  });

  it('moves a record whose new version starts in another month to that month, keeping one row', async () => {
    const org = newOrg();
    await applyBatch(t.warehouse, records(org, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70)]));
    await applyBatch(
      t.warehouse,
      records(org, [
        measurement('r1', 'c2', '2024-03-02T09:00:00Z', 71, { start_time: '2024-04-30T23:00:00Z' }),
      ]),
    );
    const rows = await sql<{ partition: string; checksum: string }>`
      select tableoid::regclass::text as partition, checksum from validic.records where org_id = ${org}`.execute(
      t.warehouse.db,
    );
    expect(rows.rows).toEqual([{ partition: 'validic_partitions.records_2024_04', checksum: 'c2' }]);
    expect(await metricValues(org, 'r1')).toEqual(['body_weight=71', 'bmi=22.5']);
    // The replaced version is archived in its own month.
    const versions = await sql<{ partition: string; checksum: string }>`
      select tableoid::regclass::text as partition, checksum from validic.record_versions where org_id = ${org}`.execute(
      t.warehouse.db,
    );
    expect(versions.rows).toEqual([
      { partition: 'validic_partitions.record_versions_2024_03', checksum: 'c1' },
    ]);
  });

  it('keeps a record without start_time in the undated partition, and dedupes it there', async () => {
    const org = newOrg();
    const undated = measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70, { start_time: null });
    await applyBatch(t.warehouse, records(org, [undated]));
    const again = await applyBatch(t.warehouse, records(org, [undated]));
    expect(again).toMatchObject({ inserted: 0, unchanged: 1 });
    const rows = await sql<{ partition: string }>`
      select tableoid::regclass::text as partition from validic.records where org_id = ${org}`.execute(
      t.warehouse.db,
    );
    expect(rows.rows).toEqual([{ partition: 'validic_partitions.records_undated' }]);
  });

  it('accepts type "measurements" and stores it as measurement', async () => {
    const org = newOrg();
    await applyBatch(
      t.warehouse,
      records(org, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70, { type: 'measurements' })]),
    );
    expect((await current(org, 'r1'))?.type).toBe('measurement');
  });

  it('keeps the same id apart in two organizations', async () => {
    const a = newOrg();
    const b = newOrg();
    await applyBatch(t.warehouse, records(a, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70)]));
    const result = await applyBatch(
      t.warehouse,
      records(b, [measurement('r1', 'c1', '2024-03-01T09:00:00Z', 70)]),
    );
    expect(result.inserted).toBe(1);
  });

  it('concurrent loads of the same org (stream and replay at once) serialize and agree', async () => {
    const org = newOrg();
    const v = (c: string, day: number) => measurement('r1', c, `2024-03-0${day}T09:00:00Z`, 70 + day);
    await Promise.all([
      applyBatch(t.warehouse, records(org, [v('c1', 1), v('c3', 3)], 'stream')),
      applyBatch(t.warehouse, records(org, [v('c2', 2)], 'replay')),
      applyBatch(t.warehouse, records(org, [v('c4', 4), v('c1', 1)], 'poll')),
      applyBatch(t.warehouse, records(org, [v('c2', 2), v('c3', 3)], 'replay')),
    ]);
    expect((await current(org, 'r1'))?.checksum).toBe('c4');
    expect(await versions(org, 'r1')).toEqual(['c1', 'c2', 'c3']);
    expect(await metricValues(org, 'r1')).toEqual(['body_weight=74', 'bmi=22.5']);
  });
});
