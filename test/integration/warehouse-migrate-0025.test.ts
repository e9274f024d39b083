/**
 * 0025 on a warehouse whose push queue holds fetches stored before push fetches were bounded: a pending
 * activity fetch from 1990 to ten years ahead becomes one pending fetch per 28-day window of the last year and a day
 * (each planning one request, covering the clamped range exactly once, the item count on the first), a
 * queued one planning many requests is marked failed with the reason and its pieces stored pending, a
 * narrow one keeps its range in its window, other modes are untouched; `planned_requests` says what each
 * fetch plans.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/warehouse/migrate.ts';
import { createEmptyDatabase, migrationsBefore } from '../helpers/pg.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const before = migrationsBefore('0025');
const t = useTestDatabase(createEmptyDatabase);
const DAY = 86_400_000;
const BUCKET = 28 * DAY;

describe('migration 0025', () => {
  it('bounds the push fetches stored before it, and plans each one', async () => {
    const db = t.warehouse.db;
    await migrateToLatest(db, before);
    const insert = (f: {
      user: string;
      mode?: string;
      state?: string;
      start: string | null;
      end: string | null;
      items?: number;
    }) =>
      sql`
      insert into validic_sync.push_fetches (org_id, object, mode, user_id, record_id, bucket, range_start,
        range_end, sources, items, first_item_at, last_item_at, due_at, state, claimed_at, claims)
      values ('o', 'weight', ${f.mode ?? 'activity'}, ${f.user}, '', '', ${f.start}, ${f.end}, '{app}',
        ${f.items ?? 2}, now(), now(), now(), ${f.state ?? 'pending'},
        ${f.state === 'queued' ? sql`now()` : null}, ${f.state === 'queued' ? 1 : 0})`.execute(db);
    const future = new Date(Date.now() + 3650 * DAY).toISOString();
    await insert({ user: 'wide', start: '1990-01-01T00:00:00Z', end: future, items: 2 });
    await insert({
      user: 'wide',
      state: 'queued',
      start: '2000-01-01T00:00:00Z',
      end: '2026-11-01T00:00:00Z',
    });
    const recent = new Date(Date.now() - 3 * DAY).toISOString();
    await insert({ user: 'narrow', start: recent, end: recent, items: 1 });
    await insert({ user: 'latest', mode: 'updated', start: recent, end: recent });

    await migrateToLatest(db);

    const rows = (
      await sql<{
        user_id: string;
        mode: string;
        state: string;
        bucket: string;
        range_start: Date;
        range_end: Date;
        items: number;
        planned_requests: number;
        error: string | null;
      }>`select user_id, mode, state, bucket, range_start, range_end, items, planned_requests, error
         from validic_sync.push_fetches order by user_id, state, range_start`.execute(db)
    ).rows;
    const wide = rows.filter((r) => r.user_id === 'wide' && r.state === 'pending');
    // Every piece one request, within its bucket, consecutive, covering the clamped range once.
    expect(wide.every((r) => r.planned_requests === 1)).toBe(true);
    for (const r of wide) {
      const start = Math.floor(r.range_start.getTime() / BUCKET) * BUCKET;
      expect(r.bucket).toBe(new Date(start).toISOString().slice(0, 10));
      expect(r.range_end.getTime()).toBeLessThan(start + BUCKET);
    }
    for (let i = 1; i < wide.length; i++)
      expect(wide[i]!.range_start.getTime()).toBe(wide[i - 1]!.range_end.getTime() + 1);
    const oldest = wide[0]!.range_start.getTime();
    expect(Math.abs(oldest - (Date.now() - 366 * DAY))).toBeLessThan(60_000);
    expect(Math.abs(wide.at(-1)!.range_end.getTime() - (Date.now() + DAY))).toBeLessThan(60_000);
    expect(wide.length).toBeGreaterThanOrEqual(14);
    expect(wide.length).toBeLessThanOrEqual(15);
    // The pending one's 2 items and the queued one's 2 on the first piece they share.
    expect(wide.map((r) => r.items).reduce((a, b) => a + b, 0)).toBe(4);
    expect(rows.filter((r) => r.user_id === 'wide' && r.state === 'failed')).toMatchObject([
      { error: expect.stringContaining('replaced by one fetch per 28-day window') },
    ]);
    const narrow = rows.filter((r) => r.user_id === 'narrow');
    expect(narrow).toMatchObject([{ state: 'pending', items: 1, planned_requests: 1 }]);
    expect(narrow[0]!.range_start.toISOString()).toBe(recent);
    expect(rows.filter((r) => r.user_id === 'latest')).toMatchObject([
      { mode: 'updated', bucket: '', planned_requests: 1 },
    ]);
  });
});
