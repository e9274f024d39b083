/**
 * Redelivering what is already stored must write no tuple in `validic` (no dead tuples, no WAL, no
 * index churn): checked with pg_stat_user_tables. Statistics are flushed by the backend that did the
 * work, so the loader runs on a one-connection pool and forces that backend's flush.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Batch, RawItem } from '../../src/pipeline/batch.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';
import {
  food,
  metric,
  rawConnectionEvent,
  rawLegacyRecord,
  rawRecord,
  rawUser,
  segment,
} from '../helpers/fixtures/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

let t: TestDatabase;
let single: Warehouse;
beforeAll(async () => {
  t = await createTestDatabase();
  single = await openWarehouse({ databaseUrl: t.url, maxConnections: 1 });
});
afterAll(async () => {
  await single?.close();
  await t?.drop();
});

const ORG = 'org-no-write';

function items(checksumSuffix: string): RawItem[] {
  const common = (id: string, type: string) =>
    rawRecord(type, {
      id,
      checksum: `${id}-${checksumSuffix}`,
      start_time: '2024-04-01T00:00:00Z',
      end_time: '2024-04-01T00:00:00Z',
      created_at: checksumSuffix === 'v1' ? '2024-04-01T01:00:00Z' : '2024-04-02T01:00:00Z',
    });
  return [
    {
      kind: 'record',
      raw: {
        ...common('m1', 'measurement'),
        metrics: [metric('pulse', 60, 'bpm')],
      },
    },
    {
      kind: 'record',
      raw: {
        ...common('n1', 'nutrition'),
        name: 'lunch',
        category: 'meal',
        metrics: [metric('energy_consumed', 500, 'kcal', 'manual')],
        segments: [segment('main', [metric('fat', 10, 'g', 'manual')], [food('rice', [100, 'g'])])],
      },
    },
    {
      kind: 'record',
      raw: {
        ...common('i1', 'intraday'),
        granularity: { interval: 1, unit: 'minutes' },
        metrics: [
          {
            type: 'steps',
            unit: 'steps',
            origin: 'device',
            data_points: [{ time: '2024-04-01T00:00:00Z', value: '12' }],
          },
        ],
      },
    },
    { kind: 'record', raw: { ...common('s1', 'sleep'), metrics: [] } },
    {
      kind: 'user',
      raw: rawUser({ updated_at: '2024-01-01T00:00:00Z' }),
    },
    {
      kind: 'connection_event',
      raw: rawConnectionEvent('create', { id: 'e1', event_time: '2024-04-01T00:00:00Z' }),
    },
    {
      kind: 'legacy',
      object: 'routine',
      raw: rawLegacyRecord({
        _id: 'L1',
        timestamp: '2024-04-01T00:00:00+00:00',
        steps: 1000,
        last_updated: '2024-04-01T05:00:00.000-04:00',
      }),
    },
  ];
}

const batch = (suffix: string): Batch => ({ orgId: ORG, arrivedVia: 'replay', items: items(suffix) });

async function tupleWrites(): Promise<number> {
  // Make the loader's backend publish its counters, then read them afresh.
  await sql`select pg_stat_force_next_flush()`.execute(single.db);
  await sql`select 1`.execute(single.db);
  await sql`select pg_stat_clear_snapshot()`.execute(t.warehouse.db);
  const { rows } = await sql<{ writes: number }>`
    select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int as writes
    from pg_stat_user_tables where schemaname in ('validic', 'validic_partitions')`.execute(t.warehouse.db);
  return rows[0]!.writes;
}

describe('an all-duplicates batch', () => {
  it('writes no tuple in the validic schema', async () => {
    const first = await applyBatch(single, batch('v1'));
    expect(first.inserted).toBe(7);
    const afterFirst = await tupleWrites();
    expect(afterFirst).toBeGreaterThan(0);

    const again = await applyBatch(single, batch('v1'));
    expect(again).toMatchObject({ inserted: 0, updated: 0, stale: 0, unchanged: 7 });
    expect(await tupleWrites()).toBe(afterFirst);

    // The measurement detects writes at all: a changed batch does move the counters.
    const changed = await applyBatch(single, batch('v2'));
    expect(changed.updated).toBe(4);
    expect(await tupleWrites()).toBeGreaterThan(afterFirst);
  });
});
