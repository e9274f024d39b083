/**
 * The audit repairs every drift it finds: in a warehouse synced from the sandbox, 20 rows deleted, 10
 * rows' checksums altered at their own created_at, and one record the platform revived after deleting
 * it (the same checksum throughout, `deleted_at` null again, a later created_at). `audit --sample
 * 100%` reports repaired = missing + stale, the warehouse then equals the platform, the revived
 * record keeps every version it had in record_versions, and a second run finds no drift.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { type DateWindow, planDateWindows } from '../../src/validic/platform-limits.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { compareWithTruth } from '../helpers/compare-with-truth.ts';
import { useSandbox, useTempDir } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const DAY_MS = 86_400_000;
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

/** Whether a UTC start date lies two days or more inside a window: the same cell under either date reading. */
const inner = (startDate: string, windows: DateWindow[]) =>
  windows.some((w) => startDate >= addDays(w.startDate, 2) && startDate <= addDays(w.endDate, -2));

const RECORDS_LINE = /records: equal (\d+), missing (\d+), stale (\d+), extra (\d+); repaired (\d+)\n/;

describe('the audit repairs what it finds', () => {
  const sandbox = useSandbox({ seed: 43, users: 5, days: 40 });
  const db = useTestDatabase();
  const dir = useTempDir('validic-audit-repair-');

  it('20 rows deleted, 10 checksums altered at the same created_at, a revived record: all repaired, then 0 drift', async () => {
    const from = day(39);
    const to = day(0);
    const windows = planDateWindows(from, to);
    const config = await dir.writeJson('config.json', { audit: { settleMinutes: 0 } });
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: config });
    const warehouse = db.warehouse.db;

    const backfill = await runCli(['backfill', '--from', from, '--to', to], env);
    expect(backfill.code, backfill.stderr).toBe(0);

    // The platform deletes a record keeping its checksum, the warehouse syncs the delete, then the
    // platform revives it: the same checksum, deleted_at null, a later created_at.
    const candidates = sandbox.truth
      .records()
      .filter((r) => r.deleted_at === null && inner(r.start_time.slice(0, 10), windows));
    const revived = candidates[Math.floor(candidates.length / 2)]!;
    sandbox.control.setFaults({ deleteKeepsChecksum: true });
    sandbox.control.deleteRecord(revived.id);
    sandbox.control.setFaults({ deleteKeepsChecksum: false });
    const resync = await runCli(['backfill', '--from', from, '--to', to, '--restart'], env);
    expect(resync.code, resync.stderr).toBe(0);
    const afterDelete = await sql<{ checksum: string; deleted: boolean }>`
      select checksum, deleted_at is not null as deleted from validic.records where id = ${revived.id}`.execute(
      warehouse,
    );
    expect(afterDelete.rows).toEqual([{ checksum: revived.checksum, deleted: true }]);
    const back = sandbox.control.updateRecord(revived.id, { deleted_at: null });
    expect(back.checksum).toBe(revived.checksum);

    // Plant: 20 rows gone, 10 rows at another checksum with their own created_at (greater than the
    // platform's, so the order of versions alone would keep them).
    const rows = await sql<{ id: string; start_date: string }>`
      select id, to_char(start_time at time zone 'UTC', 'YYYY-MM-DD') as start_date from validic.records
      where uid is not null and deleted_at is null and id <> ${revived.id} order by id`.execute(warehouse);
    const plantable = rows.rows.filter((r) => inner(r.start_date, windows)).map((r) => r.id);
    expect(plantable.length).toBeGreaterThanOrEqual(30);
    const step = Math.floor(plantable.length / 30);
    const picked = Array.from({ length: 30 }, (_, i) => plantable[i * step]!);
    const [gone, altered] = [picked.slice(0, 20), picked.slice(20)];
    await sql`delete from validic.records where id = any(${gone}::text[])`.execute(warehouse);
    await sql`update validic.records set checksum = 'zzzz-planted-' || checksum
      where id = any(${altered}::text[])`.execute(warehouse);
    const planted = await compareWithTruth(db.warehouse, sandbox);
    expect(planted.missingRecords.sort()).toEqual([...gone].sort());
    expect(planted.wrongVersion.sort()).toEqual([...altered].sort());
    expect(planted.wrongDeleted).toEqual([revived.id]);

    const audit = await runCli(['audit', '--from', from, '--to', to, '--sample', '100%'], env);
    expect(audit.code, audit.stderr).toBe(0);
    const [, , missing, stale, extra, repaired] = RECORDS_LINE.exec(audit.stdout)!.map(Number);
    expect({ missing, stale, extra }).toEqual({ missing: 20, stale: 11, extra: 0 });
    expect(repaired).toBe(missing! + stale!);

    const after = await compareWithTruth(db.warehouse, sandbox);
    expect(after.missingRecords).toEqual([]);
    expect(after.wrongVersion).toEqual([]);
    expect(after.wrongDeleted).toEqual([]);
    // The revived record is current again, and keeps the version before its delete and the delete.
    const history = await sql<{ deleted: boolean }>`
      select deleted_at is not null as deleted from validic.record_versions
      where record_id = ${revived.id} order by created_at`.execute(warehouse);
    expect(history.rows).toEqual([{ deleted: false }, { deleted: true }]);

    const again = await runCli(
      ['audit', '--from', from, '--to', to, '--sample', '100%', '--fail-on-drift'],
      env,
    );
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toMatch(/cells: complete \d+, drift 0\n/);
    expect(RECORDS_LINE.exec(again.stdout)!.slice(2).map(Number)).toEqual([0, 0, 0, 0]);
  });
});
