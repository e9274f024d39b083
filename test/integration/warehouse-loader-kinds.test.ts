import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Batch, RawItem } from '../../src/pipeline/batch.ts';
import { listCursors } from '../../src/warehouse/cursors.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { countQuarantine, countQuarantineByKind } from '../../src/warehouse/quarantine.ts';
import {
  findUnfinishedRun,
  finishRun,
  listPendingWindows,
  planWindows,
  startRun,
  summarizeLedger,
  summarizeLedgerByResource,
} from '../../src/warehouse/window-ledger.ts';
import {
  food,
  metric,
  rawConnectionEvent,
  rawLegacyRecord,
  rawRecord,
  rawUser,
  segment,
} from '../helpers/fixtures/index.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const t = useTestDatabase();

let seq = 0;
const newOrg = () => `org-kinds-${++seq}`;
const batch = (orgId: string, items: RawItem[], arrivedVia: Batch['arrivedVia'] = 'poll'): Batch => ({
  orgId,
  arrivedVia,
  items,
});

const envelope = (id: string, type: string, extra: Record<string, unknown> = {}) =>
  rawRecord(type, { id, offset_origin: 'user_defined', ...extra });

describe('records of every resource type', () => {
  it('stores nutrition segments, food, serving and their metrics', async () => {
    const org = newOrg();
    const raw = envelope('n1', 'nutrition', {
      name: 'Breakfast',
      category: 'meal',
      metrics: [metric('energy_consumed', 420, 'kcal', 'manual')],
      segments: [
        segment(
          'eggs',
          [metric('protein', 12, 'g', 'manual')],
          [food('Egg', [2, 'large'], [metric('fat', 5, 'g', 'manual')])],
        ),
      ],
    });
    await applyBatch(t.warehouse, batch(org, [{ kind: 'record', raw }]));
    const db = t.warehouse.db;
    const rec = await db
      .selectFrom('validic.records')
      .selectAll()
      .where('org_id', '=', org)
      .executeTakeFirstOrThrow();
    expect(rec).toMatchObject({ name: 'Breakfast', category: 'meal', offset_origin: 'user_defined' });
    expect(
      await db
        .selectFrom('validic.nutrition_segments')
        .select(['segment_index', 'name'])
        .where('org_id', '=', org)
        .execute(),
    ).toEqual([{ segment_index: 0, name: 'eggs' }]);
    expect(
      await db
        .selectFrom('validic.nutrition_food')
        .select(['name', 'brand', 'serving_amount', 'serving_unit_name'])
        .where('org_id', '=', org)
        .execute(),
    ).toEqual([{ name: 'Egg', brand: '', serving_amount: 2, serving_unit_name: 'large' }]);
    expect(
      await db
        .selectFrom('validic.nutrition_segment_metrics')
        .select(['type', 'value'])
        .where('org_id', '=', org)
        .execute(),
    ).toEqual([{ type: 'protein', value: 12 }]);
    expect(
      await db
        .selectFrom('validic.nutrition_food_metrics')
        .select(['type', 'value'])
        .where('org_id', '=', org)
        .execute(),
    ).toEqual([{ type: 'fat', value: 5 }]);
    expect(
      await db
        .selectFrom('validic.record_metrics')
        .select(['type', 'value'])
        .where('org_id', '=', org)
        .execute(),
    ).toEqual([{ type: 'energy_consumed', value: 420 }]);
  });

  it('stores intraday points as arrays behind the intraday_points view', async () => {
    const org = newOrg();
    const raw = envelope('i1', 'intraday', {
      granularity: { interval: 5, unit: 'minutes' },
      tags: [{ name: 'range_start', value: '2024-06-01T00:00:00Z' }],
      metrics: [
        {
          type: 'blood_glucose',
          unit: 'mg/dL',
          origin: 'device',
          data_points: [
            { time: '2024-06-01T00:00:00Z', value: 101 },
            { time: '2024-06-01T00:05:00Z', value: '103.5' },
            { time: '2024-06-01T00:20:00Z', value: 99 },
          ],
        },
      ],
    });
    await applyBatch(t.warehouse, batch(org, [{ kind: 'record', raw }]));
    const points = await t.warehouse.db
      .selectFrom('validic.intraday_points')
      .select(['record_id', 'metric_type', 'unit', 'time', 'value'])
      .where('org_id', '=', org)
      .orderBy('time')
      .execute();
    expect(points.map((p) => [p.record_id, p.metric_type, p.unit, p.time.toISOString(), p.value])).toEqual([
      ['i1', 'blood_glucose', 'mg/dL', '2024-06-01T00:00:00.000Z', 101],
      ['i1', 'blood_glucose', 'mg/dL', '2024-06-01T00:05:00.000Z', 103.5],
      ['i1', 'blood_glucose', 'mg/dL', '2024-06-01T00:20:00.000Z', 99],
    ]);
    const series = await t.warehouse.db
      .selectFrom('validic.intraday_series')
      .selectAll()
      .where('org_id', '=', org)
      .execute();
    expect(series).toHaveLength(1);
    const rec = await t.warehouse.db
      .selectFrom('validic.records')
      .selectAll()
      .where('org_id', '=', org)
      .executeTakeFirstOrThrow();
    expect(rec).toMatchObject({ granularity_interval: 5, granularity_unit: 'minutes' });
    expect(rec.tags).toEqual([{ name: 'range_start', value: '2024-06-01T00:00:00Z' }]);
  });

  it('loads an intraday or cgm record with bad points: good points kept, bad_points counted, a note in quarantine', async () => {
    const org = newOrg();
    const points = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        time: `2024-06-01T0${i}:00:00Z`,
        value: i === 1 ? null : i === 2 ? '' : i === 3 ? 'n/a' : 100 + i,
      }));
    // 120 records: past the loader's COPY threshold, and 2 through the single-statement path below.
    const records = (prefix: string, n: number): RawItem[] =>
      Array.from({ length: n }, (_, i) => ({
        kind: 'record',
        raw: envelope(`${prefix}${i}`, i % 2 === 0 ? 'intraday' : 'cgm', {
          metrics: [{ type: 'blood_glucose', unit: 'mg/dL', data_points: points(6) }],
        }),
      }));
    for (const items of [records('bp', 120), records('small', 2)]) {
      const result = await applyBatch(t.warehouse, batch(org, items));
      expect(result.quarantined).toBe(0);
      expect(result.inserted).toBe(items.length);
    }
    const series = await t.warehouse.db
      .selectFrom('validic.intraday_series')
      .select(['record_id', 'value', 'bad_points'])
      .where('org_id', '=', org)
      .execute();
    expect(series).toHaveLength(122);
    for (const s of series) expect(s).toMatchObject({ value: [100, 104, 105], bad_points: 3 });
    const stored = await t.warehouse.db
      .selectFrom('validic.records')
      .select('raw')
      .where('org_id', '=', org)
      .where('id', '=', 'bp0')
      .executeTakeFirstOrThrow();
    expect((stored.raw as { metrics: { data_points: unknown[] }[] }).metrics[0]!.data_points).toHaveLength(6);
    const notes = await t.warehouse.db
      .selectFrom('validic_sync.quarantine')
      .select(['kind', 'reason'])
      .where('org_id', '=', org)
      .execute();
    expect(notes).toHaveLength(122);
    expect(notes.every((n) => n.kind === 'bad_points')).toBe(true);
    expect(notes[0]!.reason).toMatch(
      /record loaded without 3 bad point\(s\).*metrics\[0\]\.data_points\[1\]\.value: not a number: null; .*data_points\[2\].*data_points\[3\]\.value: not a number: "n\/a"/,
    );
  });

  it('stores summary, workout, sleep, cgm and unknown types with common fields, metrics and raw', async () => {
    const org = newOrg();
    const items: RawItem[] = ['summary', 'workout', 'sleep', 'cgm', 'mood_journal'].map((type, i) => ({
      kind: 'record',
      raw: envelope(`g${i}`, type, {
        metrics: [metric('steps', 1000 + i, 'steps'), { weird: true }],
        novel_field: { nested: [1, 2, 3] },
      }),
    }));
    const result = await applyBatch(t.warehouse, batch(org, items, 'stream'));
    expect(result.inserted).toBe(5);
    expect(Object.keys(result.byType).sort()).toEqual(['cgm', 'mood_journal', 'sleep', 'summary', 'workout']);
    const rows = await t.warehouse.db
      .selectFrom('validic.records')
      .select(['id', 'type', 'raw', 'arrived_via'])
      .where('org_id', '=', org)
      .orderBy('id')
      .execute();
    expect(rows.map((r) => r.type)).toEqual(['summary', 'workout', 'sleep', 'cgm', 'mood_journal']);
    expect((rows[4]!.raw as { novel_field: unknown }).novel_field).toEqual({ nested: [1, 2, 3] });
    const metrics = await t.warehouse.db
      .selectFrom('validic.record_metrics')
      .select('value')
      .where('org_id', '=', org)
      .execute();
    expect(metrics).toHaveLength(5);
  });
});

describe('users', () => {
  it('inserts, updates when fields differ with a later updated_at, ignores older and identical', async () => {
    const org = newOrg();
    const user = (updatedAt: string, timezone: string) => ({
      kind: 'user' as const,
      raw: rawUser({ location: { timezone, country_code: 'US' }, updated_at: updatedAt }),
    });
    expect(
      (await applyBatch(t.warehouse, batch(org, [user('2024-02-01T00:00:00Z', 'America/New_York')])))
        .inserted,
    ).toBe(1);
    const same = await applyBatch(
      t.warehouse,
      batch(org, [user('2024-02-01T00:00:00Z', 'America/New_York')]),
    );
    expect(same).toMatchObject({ inserted: 0, updated: 0, unchanged: 1 });
    const older = await applyBatch(t.warehouse, batch(org, [user('2024-01-15T00:00:00Z', 'Europe/Paris')]));
    expect(older.updated).toBe(0);
    const newer = await applyBatch(t.warehouse, batch(org, [user('2024-03-01T00:00:00Z', 'Europe/Berlin')]));
    expect(newer.updated).toBe(1);
    const row = await t.warehouse.db
      .selectFrom('validic.users')
      .selectAll()
      .where('org_id', '=', org)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      uid: 'u1',
      user_id: 'svc-1',
      timezone: 'Europe/Berlin',
      country_code: 'US',
      status: 'active',
    });
    expect(row.marketplace_url).not.toContain('SECRET123');
    expect(JSON.stringify(row.raw)).not.toContain('SECRET123');
    // Per-user secrets (issue 15, item 4): stored redacted.
    expect(row.raw).toMatchObject({ marketplace: { token: '[REDACTED]' }, mobile: { token: '[REDACTED]' } });
  });
});

describe('connection events', () => {
  it('are immutable and keyed by id; frames are routed by shape', async () => {
    const org = newOrg();
    const user = { uid: 'u1', user_id: 's1', organization_id: org };
    const create = rawConnectionEvent('create', {
      id: 'e1',
      user,
      event_time: '2024-07-01T00:00:00Z',
      profile: { name: 'x' },
    });
    const del = rawConnectionEvent('delete', {
      id: 'e2',
      user,
      event_time: '2024-07-02T00:00:00Z',
      deleted_reason: 'user_request',
    });
    const r1 = await applyBatch(
      t.warehouse,
      batch(
        org,
        [
          { kind: 'connection_event', raw: create },
          { kind: 'frame', raw: del },
        ],
        'stream',
      ),
    );
    expect(r1.byType.connection_event).toMatchObject({ inserted: 2 });
    const r2 = await applyBatch(
      t.warehouse,
      batch(org, [{ kind: 'frame', raw: { ...create, source: { type: 'changed' } } }], 'replay'),
    );
    expect(r2.byType.connection_event).toMatchObject({ inserted: 0, unchanged: 1 });
    const rows = await t.warehouse.db
      .selectFrom('validic.connection_events')
      .selectAll()
      .where('org_id', '=', org)
      .orderBy('id')
      .execute();
    expect(rows.map((r) => [r.id, r.action, r.source_type, r.deleted_reason, r.arrived_via])).toEqual([
      ['e1', 'create', 'fitbit', null, 'stream'],
      ['e2', 'delete', 'fitbit', 'user_request', 'stream'],
    ]);
    expect(rows[0]!.profile).toEqual({ name: 'x' });
    // A record frame in the same stream lands in records.
    await applyBatch(
      t.warehouse,
      batch(org, [{ kind: 'frame', raw: envelope('m9', 'measurement', { metrics: [] }) }], 'stream'),
    );
    expect(
      await t.warehouse.db.selectFrom('validic.records').select('id').where('org_id', '=', org).execute(),
    ).toEqual([{ id: 'm9' }]);
  });
});

describe('legacy records', () => {
  it('keys on (object, _id), the later last_updated wins, both timestamp forms, typed views', async () => {
    const org = newOrg();
    const fitness = (lastUpdated: string, distance: number) => ({
      kind: 'legacy' as const,
      object: 'fitness',
      raw: rawLegacyRecord({
        _id: 'f1',
        timestamp: '2024-05-01T10:00:00.000-04:00',
        utc_offset: '-04:00',
        type: 'Running',
        intensity: 'high',
        start_time: '2024-05-01T10:00:00-04:00',
        distance,
        duration: 1800,
        calories: 300,
        activity_id: 'act-1',
        activity_category: 'Run',
        validated: true,
        source: 'runapp',
        source_name: 'Run App',
        last_updated: lastUpdated,
        user_id: 'svc-9',
      }),
    });
    const r1 = await applyBatch(t.warehouse, batch(org, [fitness('2024-05-01T15:00:00Z', 5000)], 'legacy'));
    expect(r1.byType['legacy:fitness']).toMatchObject({ inserted: 1 });
    await applyBatch(t.warehouse, batch(org, [fitness('2024-05-01T12:00:00.000-04:00', 6000)], 'legacy')); // 16:00Z: newer
    await applyBatch(t.warehouse, batch(org, [fitness('2024-05-01T14:00:00Z', 7000)], 'legacy')); // older
    const view = await t.warehouse.db
      .selectFrom('validic.legacy_fitness')
      .selectAll()
      .where('org_id', '=', org)
      .execute();
    expect(view).toHaveLength(1);
    expect(view[0]).toMatchObject({
      id: 'f1',
      distance: 6000,
      duration: 1800,
      activity_type: 'Running',
      validated: true,
      user_id: 'svc-9',
    });
    expect(view[0]!.timestamp?.toISOString()).toBe('2024-05-01T14:00:00.000Z');
    expect(view[0]!.last_updated?.toISOString()).toBe('2024-05-01T16:00:00.000Z');

    await applyBatch(
      t.warehouse,
      batch(
        org,
        [
          {
            kind: 'legacy',
            object: 'routine',
            raw: rawLegacyRecord({
              _id: 'f1',
              timestamp: '2024-05-01T04:00:00Z',
              steps: '12',
              last_updated: '2024-05-02T00:00:00Z',
            }),
          },
        ],
        'legacy',
      ),
    );
    const routine = await t.warehouse.db
      .selectFrom('validic.legacy_routine')
      .selectAll()
      .where('org_id', '=', org)
      .execute();
    expect(routine).toHaveLength(1);
    // A number sent as a string is read as v2 reads it (validic.json_number).
    expect(routine[0]!.steps).toBe(12);
  });
});

describe('quarantine', () => {
  it('keeps bad items with a precise reason, once per distinct item, while the rest lands', async () => {
    const org = newOrg();
    const bad = envelope('b1', 'measurement', { created_at: 'fast' });
    const nul = envelope('b2', 'measurement', { user_notes: ['a\u0000b'] });
    const items: RawItem[] = [
      { kind: 'record', raw: bad },
      { kind: 'record', raw: bad },
      { kind: 'record', raw: nul },
      { kind: 'record', raw: [1, 2] },
      { kind: 'unparseable', text: '{"id": "trunc', reason: 'invalid JSON: Unexpected end of input' },
      { kind: 'record', raw: envelope('ok1', 'measurement', { metrics: [] }) },
    ];
    const r = await applyBatch(t.warehouse, batch(org, items, 'stream'));
    expect(r.quarantined).toBe(5);
    expect(r.inserted).toBe(1);
    await applyBatch(t.warehouse, batch(org, [{ kind: 'record', raw: bad }], 'replay'));
    const rows = await t.warehouse.db
      .selectFrom('validic_sync.quarantine')
      .select(['kind', 'reason', 'seen_count', 'raw'])
      .where('org_id', '=', org)
      .orderBy('reason')
      .execute();
    expect(rows).toHaveLength(4);
    const badRow = rows.find((q) => q.reason.includes('created_at'));
    expect(badRow?.seen_count).toBe(3);
    expect(badRow?.reason).toBe('invalid measurement: created_at: not a timestamp: "fast"');
    expect(rows.find((q) => q.reason.includes('NUL'))).toBeTruthy();
    expect(rows.find((q) => q.kind === 'unparseable')?.raw).toBe('{"id": "trunc');
    const counts = await countQuarantine(t.warehouse.db, org);
    expect(counts.reduce((sum, c) => sum + c.items, 0)).toBe(4);
    expect(await countQuarantineByKind(t.warehouse.db, org)).toEqual({ record: 3, unparseable: 1 });
  });

  it('a failing batch moves no cursor and writes nothing', async () => {
    const org = newOrg();
    const good = { kind: 'record' as const, raw: envelope('x1', 'measurement', { metrics: [] }) };
    // A cursor value PostgreSQL refuses (NUL in jsonb) fails the transaction after the records were written.
    await expect(
      applyBatch(t.warehouse, batch(org, [good]), { cursors: [{ key: 'k', value: 'a\u0000b' }] }),
    ).rejects.toThrow();
    expect(await listCursors(t.warehouse.db, org)).toEqual([]);
    expect(
      await t.warehouse.db.selectFrom('validic.records').select('id').where('org_id', '=', org).execute(),
    ).toEqual([]);
    // Out-of-range values are quarantined by normalization instead of failing the batch.
    const huge = { kind: 'record' as const, raw: envelope('x2', 'measurement', { utc_offset: 2 ** 40 }) };
    const r = await applyBatch(t.warehouse, batch(org, [huge, good]));
    expect(r).toMatchObject({ quarantined: 1, inserted: 1 });
  });
});

describe('checkpoints and the backfill ledger', () => {
  it('plans windows idempotently and marks them done with the batch that loads them', async () => {
    const org = newOrg();
    const db = t.warehouse.db;
    const run = await startRun(db, {
      orgId: org,
      command: 'backfill',
      args: { from: '2024-01-01', to: '2024-02-15' },
    });
    const windows = [
      {
        windowKey: 'u1/measurements/2024-01-01',
        uid: 'u1',
        resource: 'measurements',
        startDate: '2024-01-01',
        endDate: '2024-01-30',
      },
      {
        windowKey: 'u1/measurements/2024-01-31',
        uid: 'u1',
        resource: 'measurements',
        startDate: '2024-01-31',
        endDate: '2024-02-15',
      },
      {
        windowKey: 'connections/2024-01-01',
        uid: null,
        resource: 'connections',
        startDate: '2024-01-01',
        endDate: '2024-01-30',
      },
    ];
    await planWindows(db, run.id, org, windows);
    await planWindows(db, run.id, org, windows);
    expect(await listPendingWindows(db, run.id)).toHaveLength(3);
    await applyBatch(
      t.warehouse,
      batch(org, [{ kind: 'record', raw: envelope('w1', 'measurement', { metrics: [] }) }]),
      {
        cursors: [{ key: 'backfill:last', value: '2024-01-30' }],
        windows: [{ runId: run.id, windowKey: 'u1/measurements/2024-01-01', records: 1, requests: 2 }],
      },
    );
    const pending = await listPendingWindows(db, run.id);
    expect(pending.map((w) => w.windowKey).sort()).toEqual([
      'connections/2024-01-01',
      'u1/measurements/2024-01-31',
    ]);
    expect(pending.find((w) => w.resource === 'connections')).toMatchObject({
      startDate: '2024-01-01',
      endDate: '2024-01-30',
      uid: null,
    });
    expect(await summarizeLedger(db, run.id)).toEqual({
      windows: 3,
      done: 1,
      pending: 2,
      records: 1,
      requests: 2,
    });
    expect((await summarizeLedgerByResource(db, run.id)).measurements).toMatchObject({ done: 1, windows: 2 });
    expect(
      (
        await findUnfinishedRun(db, {
          orgId: org,
          command: 'backfill',
          args: { from: '2024-01-01', to: '2024-02-15' },
        })
      )?.id,
    ).toBe(run.id);
    expect(
      await findUnfinishedRun(db, {
        orgId: org,
        command: 'backfill',
        args: { from: '2023-01-01', to: '2024-02-15' },
      }),
    ).toBeUndefined();
    await finishRun(db, run.id, 'done', { records: 1 });
    expect(await findUnfinishedRun(db, { orgId: org, command: 'backfill' })).toBeUndefined();
    const cursors = await listCursors(db, org, 'backfill:');
    expect(cursors.map((c) => [c.key, c.value])).toEqual([['backfill:last', '2024-01-30']]);
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from validic_sync.runs where id = ${run.id} and status = 'done'`.execute(db);
    expect(rows[0]!.n).toBe(1);
  });
});
