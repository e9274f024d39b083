import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import type { Batch, RawItem } from '../../src/pipeline/batch.ts';
import { applyBatch, loadLocks, MAX_KEY_LOCKS } from '../../src/warehouse/loader/apply-batch.ts';
import { loadTransaction } from '../../src/warehouse/loader/load-transaction.ts';
import { metric, rawRecord } from '../helpers/fixtures/index.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const t = useTestDatabase();

const measurement = (id: string, checksum = 'c1') =>
  rawRecord('measurement', {
    id,
    checksum,
    metrics: [metric('body_weight', 70, 'kg')],
    created_at: '2024-03-01T09:00:00Z',
  });

const batchOf = (orgId: string, ids: string[]): Batch => ({
  orgId,
  arrivedVia: 'poll',
  items: ids.map((id): RawItem => ({ kind: 'record', raw: measurement(id) })),
});

/** Holds the locks a load of `ids` takes, in an open transaction, until the returned release is called. */
async function holdLocksOf(orgId: string, ids: string[]) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held!: () => void;
  const isHeld = new Promise<void>((resolve) => {
    held = resolve;
  });
  const records = ids.map((id) => ({ record: { id } }));
  const done = loadTransaction(
    t.warehouse,
    { locks: loadLocks(orgId, { records: records as never, users: [], legacy: [] }) },
    async () => {
      held();
      await released;
    },
  );
  await isHeld;
  return async () => {
    release();
    await done;
  };
}

/** Advisory lock requests some session of this test's database is waiting for. */
async function waitingAdvisoryLocks(): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted
      and database = (select oid from pg_database where datname = current_database())`.execute(
    t.warehouse.db,
  );
  return rows[0]?.n ?? 0;
}

async function stored(orgId: string): Promise<string[]> {
  const rows = await t.warehouse.db
    .selectFrom('validic.records')
    .select('id')
    .where('org_id', '=', orgId)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

describe('loader locks: per key for small batches, per org for big ones', () => {
  it('a small batch locks its keys and its org shared; a big one its org exclusively', () => {
    const small = loadLocks('o', {
      records: [{ record: { id: 'r1' } }] as never,
      users: [{ uid: 'u1' }] as never,
      legacy: [],
    });
    expect(small.shared).toEqual(['validic-sync:load:o']);
    expect(small.exclusive).toEqual(['validic-sync:load:o:record:r1', 'validic-sync:load:o:user:u1']);
    const many = Array.from({ length: MAX_KEY_LOCKS + 1 }, (_, i) => ({ record: { id: `r${i}` } }));
    expect(loadLocks('o', { records: many as never, users: [], legacy: [] })).toEqual({
      exclusive: ['validic-sync:load:o'],
    });
  });

  it('loads of disjoint ids of one org run side by side; a load sharing an id waits', async () => {
    const org = 'org-locks-1';
    const release = await holdLocksOf(org, ['a1', 'a2']);
    // Disjoint: completes while the other load is still open.
    await applyBatch(t.warehouse, batchOf(org, ['b1', 'b2']));
    expect(await stored(org)).toEqual(['b1', 'b2']);
    // Sharing a2: waits for the open load.
    const overlapping = applyBatch(t.warehouse, batchOf(org, ['a2', 'c1']));
    await vi.waitFor(async () => expect(await waitingAdvisoryLocks()).toBeGreaterThan(0));
    expect(await stored(org)).toEqual(['b1', 'b2']);
    await release();
    const result = await overlapping;
    expect(result.inserted).toBe(2);
    expect(await stored(org)).toEqual(['a2', 'b1', 'b2', 'c1']);
  });

  it('a big batch waits for the small loads of its org, then loads', async () => {
    const org = 'org-locks-2';
    const release = await holdLocksOf(org, ['x1']);
    const ids = Array.from({ length: MAX_KEY_LOCKS + 1 }, (_, i) => `big-${String(i).padStart(3, '0')}`);
    const big = applyBatch(t.warehouse, batchOf(org, ids));
    await vi.waitFor(async () => expect(await waitingAdvisoryLocks()).toBeGreaterThan(0));
    expect(await stored(org)).toEqual([]);
    await release();
    expect((await big).inserted).toBe(ids.length);
  });

  it('concurrent overlapping small loads agree with one after the other', async () => {
    const org = 'org-locks-3';
    const v = (id: string, c: string) => measurement(id, c);
    const batch = (raws: unknown[]): Batch => ({
      orgId: org,
      arrivedVia: 'poll',
      items: raws.map((raw): RawItem => ({ kind: 'record', raw })),
    });
    const results = await Promise.all([
      applyBatch(t.warehouse, batch([v('p1', 'c1'), v('p2', 'c1')])),
      applyBatch(t.warehouse, batch([v('p2', 'c1'), v('p3', 'c1')])),
      applyBatch(t.warehouse, batch([v('p3', 'c1'), v('p1', 'c1')])),
      applyBatch(t.warehouse, batch([v('p4', 'c1')])),
    ]);
    const inserted = results.reduce((sum, r) => sum + r.inserted, 0);
    const unchanged = results.reduce((sum, r) => sum + r.unchanged, 0);
    expect(inserted).toBe(4);
    expect(unchanged).toBe(3);
    expect(await stored(org)).toEqual(['p1', 'p2', 'p3', 'p4']);
  });
});
