/**
 * Records exactly as the platform sent them, in PostgreSQL: numbers a double would change stay exact in
 * `raw` and in the stored metrics; a metric that cannot be read is left out with an informational
 * quarantine entry, the good ones loaded; `latest_blood_pressure.measured_at_local` is the user's wall
 * time in every session; the legacy views read numbers as v2 does, whatever raw holds; and a legacy
 * record keeps every version it had.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Batch, RawItem } from '../../src/pipeline/batch.ts';
import { parseJsonExactly } from '../../src/pipeline/exact-json.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { rawLegacyRecord, rawRecord } from '../helpers/fixtures/index.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const t = useTestDatabase();

let seq = 0;
const newOrg = () => `org-fidelity-${++seq}`;
const batch = (orgId: string, items: RawItem[], arrivedVia: Batch['arrivedVia'] = 'poll'): Batch => ({
  orgId,
  arrivedVia,
  items,
});
const records = (orgId: string, raws: unknown[]) =>
  batch(
    orgId,
    raws.map((raw) => ({ kind: 'record', raw })),
  );

describe('v2 records', () => {
  it('keep every number exactly as sent in raw and in their metrics', async () => {
    const org = newOrg();
    const raw =
      parseJsonExactly(`{"id":"big1","type":"measurement","checksum":"c1","start_time":"2024-03-01T08:00:00Z",
      "created_at":"2024-03-01T08:00:01Z","user":{"uid":"u1"},
      "metrics":[{"type":"count","unit":"n","value":12345678901234567890},{"type":"body_weight","unit":"kg","value":70.50},
                 {"type":"ratio","unit":"","value":"1e3"}],
      "extra":{"huge":1e400,"tiny":1e-400}}`);
    expect(await applyBatch(t.warehouse, records(org, [raw]))).toMatchObject({ inserted: 1, quarantined: 0 });
    const { rows } = await sql<{ raw: string; metrics: string; value: number }>`
      select r.raw::text as raw, r.metrics::text as metrics,
        (select value from validic.record_metrics m where m.org_id = r.org_id and m.record_id = r.id and m.type = 'count') as value
      from validic.records r where r.org_id = ${org}`.execute(t.warehouse.db);
    expect(rows[0]!.raw).toContain('"value": 12345678901234567890');
    expect(rows[0]!.raw).toContain('"value": 70.50');
    expect(rows[0]!.raw).toContain('"extra": {"huge": 1');
    // jsonb keeps each number's digits and scale (1e3 is written 1000).
    expect(rows[0]!.metrics).toBe(
      '[[0, "count", null, "n", 12345678901234567890], [1, "body_weight", null, "kg", 70.50], [2, "ratio", null, "", 1000]]',
    );
    // The view's value is double precision (about 15 significant digits): the exact one is in records.metrics.
    expect(rows[0]!.value).toBe(Number('12345678901234567890'));
  });

  it('an unreadable metric is left out and named in an informational quarantine entry; the good ones load', async () => {
    const org = newOrg();
    const raw = rawRecord('measurement', {
      id: 'bp1',
      metrics: [
        { type: 'systolic', unit: 'mmHg', value: 120 },
        { type: 'diastolic', unit: 'mmHg', value: 'n/a' },
        { type: 'pulse', unit: 'bpm', value: '61' },
      ],
    });
    const summary = rawRecord('summary', {
      id: 's1',
      metrics: [
        { type: 'steps', unit: 'steps', value: 'n/a' },
        { type: 'floors', unit: 'floors', value: 4 },
      ],
    });
    const result = await applyBatch(t.warehouse, records(org, [raw, summary]));
    expect(result).toMatchObject({ inserted: 2, quarantined: 0 });
    const metrics = await t.warehouse.db
      .selectFrom('validic.record_metrics')
      .select(['record_id', 'type', 'value'])
      .where('org_id', '=', org)
      .orderBy('record_id')
      .orderBy('metric_index')
      .execute();
    expect(metrics.map((m) => `${m.record_id} ${m.type}=${m.value}`)).toEqual([
      'bp1 systolic=120',
      'bp1 pulse=61',
      's1 floors=4',
    ]);
    const notes = await t.warehouse.db
      .selectFrom('validic_sync.quarantine')
      .select(['kind', 'reason'])
      .where('org_id', '=', org)
      .orderBy('reason')
      .execute();
    expect(notes).toEqual([
      {
        kind: 'bad_values',
        reason:
          'measurement record loaded without 1 unreadable value(s): metrics[1].value: not a number: "n/a"',
      },
      {
        kind: 'bad_values',
        reason: 'summary record loaded without 1 unreadable value(s): metrics[0].value: not a number: "n/a"',
      },
    ]);
  });

  it("latest_blood_pressure.measured_at_local is the user's wall time, whatever the session's time zone", async () => {
    const org = newOrg();
    const raw = rawRecord('measurement', {
      id: 'bp-local',
      start_time: '2024-03-01T07:30:00Z',
      utc_offset: -8 * 3600,
      metrics: [
        { type: 'systolic', unit: 'mmHg', value: 120 },
        { type: 'diastolic', unit: 'mmHg', value: 80 },
      ],
    });
    await applyBatch(t.warehouse, records(org, [raw]));
    for (const zone of ['UTC', 'America/New_York', 'Asia/Tokyo']) {
      const row = await t.warehouse.db.connection().execute(async (conn) => {
        await sql`select set_config('timezone', ${zone}, false)`.execute(conn);
        const { rows } = await sql<{ local: string; type: string }>`
          select measured_at_local::text as local, pg_typeof(measured_at_local)::text as type
          from validic.latest_blood_pressure where org_id = ${org}`.execute(conn);
        await sql`reset timezone`.execute(conn);
        return rows[0];
      });
      expect(row, zone).toEqual({ local: '2024-02-29 23:30:00', type: 'timestamp without time zone' });
    }
  });
});

describe('legacy records', () => {
  const fitness = (fields: Record<string, unknown>) => ({
    kind: 'legacy' as const,
    object: 'fitness',
    raw: rawLegacyRecord({ _id: 'f1', ...fields }),
  });

  it('the views read numbers as v2 does: numeric strings by the JSON grammar, nothing else, never failing', async () => {
    const org = newOrg();
    const huge = parseJsonExactly('{"_id":"f2","calories":1e400,"duration":12345678901234567890}');
    const result = await applyBatch(
      t.warehouse,
      batch(
        org,
        [
          fitness({ distance: '1200.50', duration: '1e3', calories: '0x1A' }),
          { kind: 'legacy', object: 'fitness', raw: huge },
        ],
        'legacy',
      ),
    );
    expect(result).toMatchObject({ inserted: 2, quarantined: 0 });
    const view = await t.warehouse.db
      .selectFrom('validic.legacy_fitness')
      .select(['id', 'distance', 'duration', 'calories'])
      .where('org_id', '=', org)
      .orderBy('id')
      .execute();
    expect(view).toEqual([
      { id: 'f1', distance: 1200.5, duration: 1000, calories: null },
      { id: 'f2', distance: null, duration: Number('12345678901234567890'), calories: null },
    ]);
    const stored = await sql<{ raw: string }>`
      select raw::text as raw from validic.legacy_records where org_id = ${org} and id = 'f2'`.execute(
      t.warehouse.db,
    );
    expect(stored.rows[0]!.raw).toContain('"duration": 12345678901234567890');
    const notes = await t.warehouse.db
      .selectFrom('validic_sync.quarantine')
      .select(['kind', 'reason'])
      .where('org_id', '=', org)
      .orderBy('reason')
      .execute();
    expect(notes).toEqual([
      {
        kind: 'bad_values',
        reason: 'legacy:fitness record loaded without 1 unreadable value(s): calories: not a number: "0x1A"',
      },
      {
        kind: 'bad_values',
        reason:
          'legacy:fitness record loaded without 1 unreadable value(s): calories: outside the range of double precision: "1e400"',
      },
    ]);
  });

  it('keep every version: the one an update replaces, one arriving late, and one before a delete', async () => {
    const org = newOrg();
    const v1 = fitness({ distance: 5000, last_updated: '2024-05-01T15:00:00Z' });
    const v2 = fitness({ distance: 6000, last_updated: '2024-05-01T16:00:00Z' });
    const late = fitness({ distance: 5500, last_updated: '2024-05-01T15:30:00Z' });
    const v3 = fitness({ distance: 7000, last_updated: '2024-05-02T09:00:00Z' });
    const history = async () =>
      (
        await sql<{ distance: number; deleted: boolean; arrived_via: string }>`
          select (raw->>'distance')::int as distance, deleted_at is not null as deleted, arrived_via
          from validic.legacy_record_versions where org_id = ${org} and object = 'fitness' and id = 'f1'
          order by last_updated`.execute(t.warehouse.db)
      ).rows;
    const current = async () =>
      (
        await sql<{ distance: number }>`
          select (raw->>'distance')::int as distance from validic.legacy_records
          where org_id = ${org} and object = 'fitness' and id = 'f1' and deleted_at is null`.execute(
          t.warehouse.db,
        )
      ).rows;

    await applyBatch(t.warehouse, batch(org, [v1], 'legacy'));
    expect(await applyBatch(t.warehouse, batch(org, [v2], 'push'))).toMatchObject({ updated: 1 });
    expect(await history()).toEqual([{ distance: 5000, deleted: false, arrived_via: 'legacy' }]);
    // Older than the current one: not applied, kept.
    await applyBatch(t.warehouse, batch(org, [late], 'legacy'));
    expect(await current()).toEqual([{ distance: 6000 }]);
    expect(await history()).toEqual([
      { distance: 5000, deleted: false, arrived_via: 'legacy' },
      { distance: 5500, deleted: false, arrived_via: 'legacy' },
    ]);
    // Redelivering everything adds nothing.
    await applyBatch(t.warehouse, batch(org, [v1, v2, late], 'legacy'));
    expect(await history()).toHaveLength(2);
    // Found deleted, then edited on the platform: the deleted row is kept, marked so.
    await sql`update validic.legacy_records set deleted_at = now() where org_id = ${org} and id = 'f1'`.execute(
      t.warehouse.db,
    );
    await applyBatch(t.warehouse, batch(org, [v3], 'legacy'));
    expect(await current()).toEqual([{ distance: 7000 }]);
    expect(await history()).toEqual([
      { distance: 5000, deleted: false, arrived_via: 'legacy' },
      { distance: 5500, deleted: false, arrived_via: 'legacy' },
      { distance: 6000, deleted: true, arrived_via: 'push' },
    ]);
    // Several versions in one batch: the newest applies, the others are kept.
    const other = newOrg();
    await applyBatch(t.warehouse, batch(other, [v2, v1, v3], 'legacy'));
    const kept = await sql<{ distance: number }>`
      select (raw->>'distance')::int as distance from validic.legacy_record_versions
      where org_id = ${other} order by last_updated`.execute(t.warehouse.db);
    expect(kept.rows).toEqual([{ distance: 5000 }, { distance: 6000 }]);
  });
});
