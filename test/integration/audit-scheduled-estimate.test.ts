/**
 * The scheduled audit's reads against PostgreSQL: `stratumSample` (what `status` and `/metrics` estimate
 * from) gives the counts of the pure definition the coverage test holds to its interval
 * (src/audit/stratum-estimate.ts, `summarizeStratum`) on the same cells, and `cellSyncCovered` says a
 * cell's days are covered exactly when the recent poll or the backfill ledger has reached them.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { type ScheduledOutcome, stratumCellKey, summarizeStratum } from '../../src/audit/stratum-estimate.ts';
import {
  type AuditCell,
  cellSyncCovered,
  pollableUidsAtRanks,
  stratumSample,
} from '../../src/warehouse/audits.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const ORG = 'org-estimate';
const DAY_MS = 86_400_000;

describe('stratumSample', () => {
  const t = useTestDatabase();

  interface Audited {
    audit: number;
    uid: string;
    resource: string;
    startDate: string;
    stratum: 'recent' | 'history';
    outcome: ScheduledOutcome | 'failed';
    /** Seconds before now. */
    age: number;
  }

  const audited = fc.record({
    audit: fc.integer({ min: 1, max: 6 }),
    uid: fc.constantFrom('u1', 'u2', 'u3'),
    resource: fc.constantFrom('measurements', 'sleep'),
    startDate: fc.constantFrom('2026-10-04', '2026-10-05', '2026-11-01'),
    stratum: fc.constantFrom('recent' as const, 'history' as const),
    outcome: fc.constantFrom('complete' as const, 'drift' as const, 'unsynced' as const, 'failed' as const),
    age: fc.integer({ min: 0, max: 10 * 86_400 }),
  });

  it('counts what summarizeStratum counts on the same cells: each cell once, by its first judged audit', async () => {
    const db = t.warehouse.db;
    await fc.assert(
      fc.asyncProperty(fc.array(audited, { maxLength: 60 }), async (rows) => {
        await sql`delete from validic_sync.audit_cells`.execute(db);
        await sql`delete from validic_sync.audits`.execute(db);
        const ids = new Map<number, number>();
        for (const audit of new Set(rows.map((r) => r.audit))) {
          const { rows: made } = await sql<{ id: number }>`
            insert into validic_sync.audits (org_id, kind, range_from, range_to, sample, seed, population, planned, repair)
            values (${ORG}, 'schedule', '2026-01-01', '2026-11-27', 0, 's', 100, 100, true) returning id`.execute(
            db,
          );
          ids.set(audit, Number(made[0]!.id));
        }
        // The table's key is (audit, uid, resource, start_date): one row per key within a run.
        const unique = new Map<string, Audited>();
        for (const r of rows) unique.set(`${r.audit}|${r.uid}|${r.resource}|${r.startDate}`, r);
        const now = Date.now();
        for (const r of unique.values())
          await sql`
            insert into validic_sync.audit_cells (audit_id, org_id, uid, resource, start_date, end_date, stratum, outcome, audited_at)
            values (${ids.get(r.audit)!}, ${ORG}, ${r.uid}, ${r.resource}, ${r.startDate}, ${r.startDate}, ${r.stratum},
              ${r.outcome}, ${new Date(now - r.age * 1000)})`.execute(db);
        const since = new Date(now - 7 * DAY_MS);
        for (const stratum of ['recent', 'history'] as const) {
          // In audit order (time, then run), the span's, the stratum's, failed audits left out.
          const inOrder = [...unique.values()]
            .filter(
              (r) => r.stratum === stratum && r.outcome !== 'failed' && now - r.age * 1000 >= since.getTime(),
            )
            .sort((a, b) => b.age - a.age || ids.get(a.audit)! - ids.get(b.audit)!)
            .map((r) => ({ key: stratumCellKey({ ...r }), outcome: r.outcome as ScheduledOutcome }));
          expect(await stratumSample(db, ORG, stratum, since)).toEqual(summarizeStratum(inOrder));
        }
      }),
      { numRuns: 25 },
    );
  });

  it('a recent cell is one cell whatever day its window started; a history cell is one per window', () => {
    expect(
      summarizeStratum(
        [
          { uid: 'u', resource: 'sleep', startDate: '2026-10-29', stratum: 'recent' as const },
          { uid: 'u', resource: 'sleep', startDate: '2026-10-30', stratum: 'recent' as const },
          { uid: 'u', resource: 'sleep', startDate: '2026-09-04', stratum: 'history' as const },
          { uid: 'u', resource: 'sleep', startDate: '2026-10-04', stratum: 'history' as const },
        ].map((cell, i) => ({
          key: stratumCellKey(cell),
          outcome: i === 0 ? 'drift' : ('complete' as const),
        })),
      ),
    ).toEqual({ sampled: 3, complete: 2, unsynced: 0 });
    // First judged audit wins (the later one would see the audit's own repair); unsynced ones do not count.
    expect(
      summarizeStratum([
        { key: 'a', outcome: 'unsynced' },
        { key: 'a', outcome: 'drift' },
        { key: 'a', outcome: 'complete' },
        { key: 'b', outcome: 'unsynced' },
      ]),
    ).toEqual({ sampled: 1, complete: 0, unsynced: 1 });
  });
});

describe('cellSyncCovered and pollableUidsAtRanks', () => {
  const t = useTestDatabase();

  const cell = (
    stratum: 'recent' | 'history',
    startDate: string,
    endDate: string,
    uid = 'u1',
  ): AuditCell => ({
    uid,
    resource: 'sleep',
    startDate,
    endDate,
    stratum,
  });

  async function ledger(uid: string, resource: string, startDate: string, endDate: string, status: string) {
    await sql`
      insert into validic_sync.runs (id, org_id, command, args, status)
      values (${`run-${uid}-${startDate}-${status}`}, ${ORG}, 'backfill', '{}'::jsonb, 'running') on conflict do nothing`.execute(
      t.warehouse.db,
    );
    await sql`
      insert into validic_sync.backfill_windows (run_id, window_key, org_id, uid, resource, start_date, end_date, status)
      values (${`run-${uid}-${startDate}-${status}`}, ${`${resource}|${uid}|${startDate}`}, ${ORG}, ${uid}, ${resource},
        ${startDate}, ${endDate}, ${status})`.execute(t.warehouse.db);
  }

  it('a recent cell: covered once the recent poll has polled its user, or a backfill loaded days of it', async () => {
    const db = t.warehouse.db;
    const recent = cell('recent', '2026-10-29', '2026-11-27');
    expect(await cellSyncCovered(db, ORG, recent)).toBe(false);
    // Queued, not yet polled: not covered.
    await sql`insert into validic_sync.recent_polls (org_id, uid, enqueued_at) values (${ORG}, 'u1', now())`.execute(
      db,
    );
    expect(await cellSyncCovered(db, ORG, recent)).toBe(false);
    await sql`update validic_sync.recent_polls set polled_at = now() where uid = 'u1'`.execute(db);
    expect(await cellSyncCovered(db, ORG, recent)).toBe(true);
    // Another user: a pending ledger window is not coverage, a done one of the same resource is.
    const other = cell('recent', '2026-10-29', '2026-11-27', 'u2');
    await ledger('u2', 'sleep', '2026-10-20', '2026-11-18', 'pending');
    expect(await cellSyncCovered(db, ORG, other)).toBe(false);
    await ledger('u2', 'measurements', '2026-10-20', '2026-11-18', 'done');
    expect(await cellSyncCovered(db, ORG, other)).toBe(false);
    await ledger('u2', 'sleep', '2026-11-19', '2026-11-28', 'done');
    expect(await cellSyncCovered(db, ORG, other)).toBe(true);
  });

  it('a history cell: covered when every day of it lies in a done ledger window of its user and resource', async () => {
    const db = t.warehouse.db;
    const history = cell('history', '2026-09-04', '2026-10-03', 'u3');
    await ledger('u3', 'sleep', '2026-08-20', '2026-09-18', 'done');
    expect(await cellSyncCovered(db, ORG, history)).toBe(false);
    // A gap of one day (09-19) between two done windows: still not covered.
    await ledger('u3', 'sleep', '2026-09-20', '2026-10-19', 'done');
    expect(await cellSyncCovered(db, ORG, history)).toBe(false);
    await ledger('u3', 'sleep', '2026-09-19', '2026-09-19', 'done');
    expect(await cellSyncCovered(db, ORG, history)).toBe(true);
    // The recent poll reaches only the recent days: a polled user's history is not covered by it.
    await sql`insert into validic_sync.recent_polls (org_id, uid, enqueued_at, polled_at) values (${ORG}, 'u4', now(), now())`.execute(
      db,
    );
    expect(await cellSyncCovered(db, ORG, cell('history', '2026-09-04', '2026-10-03', 'u4'))).toBe(false);
  });

  it('reads the pollable users at given ranks in uid byte order, and nothing past the end', async () => {
    const db = t.warehouse.db;
    for (const uid of ['b', 'a', 'C', 'c'])
      await sql`
        insert into validic.users (org_id, uid, user_id, status, created_at, updated_at, raw)
        values (${ORG}, ${uid}, ${uid}, 'active', now(), now(), '{}'::jsonb)`.execute(db);
    // Byte order: C < a < b < c.
    expect(await pollableUidsAtRanks(db, ORG, [3, 0, 2, 9, 0])).toEqual(
      new Map([
        [0, 'C'],
        [2, 'b'],
        [3, 'c'],
      ]),
    );
    expect(await pollableUidsAtRanks(db, ORG, [])).toEqual(new Map());
  });
});
