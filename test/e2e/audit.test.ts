/**
 * `validic-sync audit` end to end: drift planted in a synced warehouse (rows deleted, versions made
 * older, a deleted record revived) is found cell by cell by `audit --sample 100%`, repaired through the
 * loader (`arrived_via = 'audit'`) and reported with exactly the planted counts; a second run finds
 * nothing. With `--no-repair` and a 5 % sample, the reported 95 % interval contains the true share of
 * complete cells in at least 19 of 20 seeded runs.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { estimateCompleteness } from '../../src/audit/completeness-interval.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { type DateWindow, planDateWindows, toV2Resource } from '../../src/validic/platform-limits.ts';
import { readAudit } from '../../src/warehouse/audits.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime } from '../../src/worker/runtime.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { compareWithTruth } from '../helpers/compare-with-truth.ts';
import { useSandbox, useTempDir } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const DAY_MS = 86_400_000;
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

interface StoredRow {
  id: string;
  uid: string;
  type: string;
  start_date: string;
  deleted: boolean;
}

/** Rows whose UTC start date lies two days or more inside a window: the same cell under either date reading. */
function innerRows(rows: StoredRow[], windows: DateWindow[]) {
  return rows.flatMap((row) => {
    const window = windows.find(
      (w) => row.start_date >= addDays(w.startDate, 2) && row.start_date <= addDays(w.endDate, -2),
    );
    return window ? [{ ...row, cell: `${row.uid}|${toV2Resource(row.type)}|${window.startDate}` }] : [];
  });
}

const ROWS = sql<StoredRow>`
  select id, uid, type, to_char(start_time at time zone 'UTC', 'YYYY-MM-DD') as start_date,
    deleted_at is not null as deleted
  from validic.records where uid is not null order by id`;

describe('audit finds planted drift, repairs it and reports it exactly', () => {
  const sandbox = useSandbox({ seed: 41, users: 6, days: 50 });
  const db = useTestDatabase();
  const dir = useTempDir('validic-audit-');

  it('audit --sample 100% finds each planted cell, repairs it, and then finds nothing', async () => {
    const from = day(49);
    const to = day(0);
    const windows = planDateWindows(from, to);
    const config = await dir.writeJson('config.json', { audit: { settleMinutes: 0 } });
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: config });

    // A record deleted on the platform before the sync: the warehouse holds it deleted.
    const before = innerRows(
      sandbox.truth.records().map((r) => ({
        id: r.id,
        uid: r.user.uid,
        type: r.type,
        start_date: r.start_time.slice(0, 10),
        deleted: r.deleted_at !== null,
      })),
      windows,
    ).filter((r) => !r.deleted);
    const toDelete = before[Math.floor(before.length / 2)]!;
    sandbox.control.deleteRecord(toDelete.id);

    // Before any sync: nothing to audit, said plainly.
    const empty = await runCli(['audit', '--from', from, '--to', to], env);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toContain('nothing to audit: the warehouse knows no user of this organization yet');

    const backfill = await runCli(['backfill', '--from', from, '--to', to], env);
    expect(backfill.code, backfill.stderr).toBe(0);
    const warehouse = db.warehouse.db;
    const rows = innerRows((await ROWS.execute(warehouse)).rows, windows);
    const revived = rows.find((r) => r.id === toDelete.id)!;
    expect(revived.deleted).toBe(true);

    // Plant: 3 rows gone, 2 rows at an older version, the deleted one revived; each in a different cell.
    const live = rows.filter((r) => !r.deleted && r.cell !== revived.cell);
    const planted: typeof rows = [];
    for (const row of live) {
      if (planted.length === 5) break;
      if (planted.some((p) => p.cell === row.cell)) continue;
      planted.push(row);
    }
    expect(planted).toHaveLength(5);
    const [gone, older] = [planted.slice(0, 3), planted.slice(3)];
    await sql`delete from validic.records where id = any(${gone.map((r) => r.id)}::text[])`.execute(
      warehouse,
    );
    await sql`update validic.records set checksum = 'planted-older', created_at = created_at - interval '1 day'
      where id = any(${older.map((r) => r.id)}::text[])`.execute(warehouse);
    await sql`update validic.records set deleted_at = null where id = ${revived.id}`.execute(warehouse);
    const before100 = await compareWithTruth(db.warehouse, sandbox);
    expect(before100.missingRecords).toHaveLength(3);
    expect(before100.wrongVersion).toHaveLength(2);
    expect(before100.wrongDeleted).toEqual([revived.id]);

    const audit = await runCli(['audit', '--from', from, '--to', to, '--sample', '100%'], env);
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stderr).not.toContain(sandbox.token);
    expect(audit.stdout).toContain('cells: complete');
    expect(audit.stdout).toMatch(/cells: complete \d+, drift 6\n/);
    expect(audit.stdout).toMatch(/records: equal \d+, missing 3, stale 3, extra 0; repaired 6\n/);
    for (const row of [...planted, revived]) expect(audit.stdout).toContain(row.id);

    // Every planted cell was found, and only those.
    const cells = await sql<{ cell: string }>`
      select uid || '|' || resource || '|' || to_char(start_date, 'YYYY-MM-DD') as cell
      from validic_sync.audit_cells where outcome = 'drift'`.execute(warehouse);
    expect(cells.rows.map((c) => c.cell).sort()).toEqual([...planted, revived].map((r) => r.cell).sort());
    const after = await compareWithTruth(db.warehouse, sandbox);
    expect(after.missingRecords).toEqual([]);
    expect(after.wrongVersion).toEqual([]);
    expect(after.wrongDeleted).toEqual([]);
    const viaAudit = await sql<{ id: string }>`
      select id from validic.records where arrived_via = 'audit' order by id`.execute(warehouse);
    expect(viaAudit.rows.map((r) => r.id)).toEqual([...planted, revived].map((r) => r.id).sort());
    // The whole population was compared: the interval is the point (printed rounded outwards).
    const full = /completeness: ([\d.]+) % of cells complete \(95 % interval ([\d.]+) % to ([\d.]+) %\)/.exec(
      audit.stdout,
    );
    expect(full, audit.stdout).not.toBeNull();
    expect(Number(full![3]) - Number(full![2])).toBeLessThanOrEqual(0.010_001);

    const status = await runCli(['status', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    const orgStatus = JSON.parse(status.stdout).orgs.find(
      (o: { orgId: string }) => o.orgId === sandbox.orgId,
    );
    expect(orgStatus.audit.lastRun).toMatchObject({
      kind: 'command',
      totals: { records: { missing: 3, stale: 3, extra: 0, repaired: 6 } },
    });
    expect(orgStatus.audit.lastRun.estimate.lower).toBe(orgStatus.audit.lastRun.estimate.upper);
    const text = await runCli(['status'], env);
    expect(text.stdout).toContain('completeness audit (warehouse compared with the platform, cell by cell)');
    expect(text.stdout).toMatch(/last run \d+ \(command, [\d-]+\.\.[\d-]+\): done/);
    if (process.env.AUDIT_TEST_VERBOSE) console.info(audit.stdout, text.stdout);

    const again = await runCli(
      ['audit', '--from', from, '--to', to, '--sample', '100%', '--fail-on-drift'],
      env,
    );
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toMatch(/cells: complete \d+, drift 0\n/);
    expect(again.stdout).toContain('completeness: 100 % of cells complete');
  });
});

describe('a 5 % audit reports an interval that holds', () => {
  const sandbox = useSandbox({ seed: 43, users: 40, days: 50 });
  const db = useTestDatabase();
  const dir = useTempDir('validic-audit-estimate-');

  // The first run through the command (its printed interval), the other 19 through the same job in this
  // process (a command's process start would be most of the test's time).
  it('contains the true completeness in at least 19 of 20 seeded runs', { timeout: 240_000 }, async () => {
    const from = day(49);
    const to = day(0);
    const windows = planDateWindows(from, to);
    const configFile = await dir.writeJson('config.json', { audit: { settleMinutes: 0 } });
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: configFile });
    const backfill = await runCli(['backfill', '--from', from, '--to', to], env);
    expect(backfill.code, backfill.stderr).toBe(0);
    const warehouse = db.warehouse.db;
    // Drift in one of every ten cells that hold records: a row removed from each.
    const rows = innerRows((await ROWS.execute(warehouse)).rows, windows).filter((r) => !r.deleted);
    const byCell = new Map<string, string>();
    for (const row of rows) if (!byCell.has(row.cell)) byCell.set(row.cell, row.id);
    const driftCells = [...byCell.values()].filter((_, i) => i % 10 === 0);
    await sql`delete from validic.records where id = any(${driftCells}::text[])`.execute(warehouse);

    const users = sandbox.truth.users().length;
    const population = users * 7 * windows.length;
    const trueCompleteness = 1 - driftCells.length / population;
    let contained = 0;
    const seen: string[] = [];
    const count = (lower: number, upper: number, label: string) => {
      if (lower <= trueCompleteness && trueCompleteness <= upper) contained++;
      seen.push(`${label} [${lower}, ${upper}]`);
    };

    const run = await runCli(
      ['audit', '--from', from, '--to', to, '--sample', '5%', '--seed', '1', '--no-repair'],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const match = /cells: complete (\d+), drift (\d+)\n/.exec(run.stdout);
    expect(match, run.stdout).not.toBeNull();
    const [complete, drift] = [Number(match![1]), Number(match![2])];
    expect(run.stdout).toContain(`cells drawn ${complete + drift} of ${population} (`);
    // The interval as the command reports it (percentages with two decimals, rounded outwards).
    const interval = /95 % interval ([\d.]+) % to ([\d.]+) %/.exec(run.stdout);
    expect(interval, run.stdout).not.toBeNull();
    const [lower, upper] = [Number(interval![1]) / 100, Number(interval![2]) / 100];
    const exact = estimateCompleteness(complete, complete + drift, population)!;
    expect(lower).toBeLessThanOrEqual(exact.lower);
    expect(upper).toBeGreaterThanOrEqual(exact.upper);
    count(lower, upper, `1: ${complete}/${complete + drift}`);

    const config = loadConfig({ ...env, DATABASE_URL: undefined }, { file: configFile });
    const runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
    try {
      for (let seed = 2; seed <= 20; seed++) {
        const runner = createInlineRunner(runtime, new AbortController().signal, 4);
        let auditId: number | undefined;
        runner.on('completed', (_job, result: any) => {
          if (result?.population !== undefined) auditId = result.auditId;
        });
        runner.enqueue('records.audit', {
          orgId: sandbox.orgId,
          from,
          to,
          sample: 0.05,
          seed: String(seed),
          repair: false,
        });
        expect((await runner.drain()).map((f) => f.error.message)).toEqual([]);
        const audit = (await readAudit(warehouse, auditId!))!;
        expect(audit.population).toBe(population);
        const { complete: k, drift: d } = audit.totals.cells;
        const e = estimateCompleteness(k, k + d, population)!;
        count(e.lower, e.upper, `${seed}: ${k}/${k + d}`);
      }
    } finally {
      await runtime.close();
    }
    if (process.env.AUDIT_TEST_VERBOSE)
      console.info(`contained ${contained}/20; true ${trueCompleteness}; ${seen.join('; ')}`);
    expect(contained, `true ${trueCompleteness.toFixed(4)}; ${seen.join('; ')}`).toBeGreaterThanOrEqual(19);
    // Nothing was repaired: the planted rows are still missing.
    const stillMissing = await sql<{ n: number }>`
      select count(*)::int as n from validic.records where id = any(${driftCells}::text[])`.execute(
      warehouse,
    );
    expect(stillMissing.rows[0]!.n).toBe(0);
  });
});
