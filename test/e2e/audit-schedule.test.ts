/**
 * The scheduled completeness audit (records.audit without a range) against the sandbox over HTTP: a tick
 * audits as many cells as the budget plan's audit share allows, a random sample within each stratum;
 * what it finds reaches `status --json`'s `orgs[].audit` (estimate per stratum, drift per day) and
 * `/metrics`. On a warehouse no sync has filled yet, a tick judges nothing: its cells are "not yet
 * synced", and status, the metrics and the alert's gauge stay quiet; once a sync has covered the days,
 * what the warehouse lacks there is drift.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditStrata, stratumPopulations } from '../../src/audit/sample-cells.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { Config } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { readAuditStatus } from '../../src/metrics/audit-status.ts';
import { collectSyncStatus } from '../../src/metrics/sync-status.ts';
import { createWorkerMetrics } from '../../src/metrics/worker-metrics.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { recordTypeOf, toV2Resource } from '../../src/validic/platform-limits.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const DAY_MS = 86_400_000;
const utcDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('the scheduled audit', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let runtime: Runtime;
  let config: Config;
  let configDir: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 47, users: 8, days: 40 });
    db = await createTestDatabase();
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
    const backfill = await runCli(
      ['backfill', '--from', utcDate(Date.now() - 40 * DAY_MS), '--to', utcDate(Date.now())],
      env,
    );
    expect(backfill.code, backfill.stderr).toBe(0);
    configDir = await mkdtemp(join(tmpdir(), 'validic-audit-schedule-'));
    const configFile = join(configDir, 'config.json');
    // 10,000 requests an hour: a 5 % audit share is about 474 an hour, 4 cells in a tick of 0.51
    // minutes, so 8 users take two ticks.
    await writeFile(
      configFile,
      JSON.stringify({
        audit: { settleMinutes: 0, lookbackDays: 90 },
        budget: { auditShare: 0.05 },
        schedules: { auditMinutes: 0.51 },
      }),
    );
    config = loadConfig(
      { ...env, DATABASE_URL: undefined, VALIDIC_REQUESTS_PER_HOUR: '10000' },
      { cwd: configDir, file: configFile },
    );
    runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
  }, 120_000);
  afterAll(async () => {
    await runtime?.close();
    await sandbox?.close();
    await db?.drop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  async function tick(on: Runtime = runtime) {
    const runner = createInlineRunner(on, new AbortController().signal, 2);
    const completed: { name: string; payload: any; result: any }[] = [];
    runner.on('completed', (job, result) => completed.push({ name: job.name, payload: job.payload, result }));
    runner.enqueue('records.audit', { orgId: sandbox.orgId });
    const failures = await runner.drain();
    expect(failures.map((f) => f.error.message)).toEqual([]);
    return {
      plan: completed.find((c) => c.name === 'records.audit' && c.result?.population !== undefined)?.result,
      cells: completed.filter((c) => c.result?.totals),
    };
  }

  const auditedCells = async (auditId: number, on = db) =>
    (
      await sql<{ uid: string; resource: string; start_date: string; stratum: string; outcome: string }>`
        select uid, resource, to_char(start_date, 'YYYY-MM-DD') as start_date, stratum, outcome
        from validic_sync.audit_cells where audit_id = ${auditId}`.execute(on.warehouse.db)
    ).rows;

  /** What the platform holds in a run's cells (the sandbox windows by UTC start date): records, and cells with any. */
  async function truthOfCells(auditId: number, on: TestDatabase) {
    const cells = await sql<{ uid: string; resource: string; start_date: string; end_date: string }>`
      select uid, resource, to_char(start_date, 'YYYY-MM-DD') as start_date, to_char(end_date, 'YYYY-MM-DD') as end_date
      from validic_sync.audit_cells where audit_id = ${auditId}`.execute(on.warehouse.db);
    const inCell = cells.rows.map(
      (c) =>
        sandbox.truth
          .records({ uid: c.uid, type: recordTypeOf(toV2Resource(c.resource)) as never })
          .filter((r) => r.start_time.slice(0, 10) >= c.start_date && r.start_time.slice(0, 10) <= c.end_date)
          .length,
    );
    return { missing: inCell.reduce((a, b) => a + b, 0), drift: inCell.filter((n) => n > 0).length };
  }

  it('audits the budget share a tick, a random sample within each stratum, every cell judged once synced', async () => {
    const org = config.organizations[0]!;
    const budget = await runtime
      .jobContext({ jobId: 't', attempt: 1, signal: new AbortController().signal, enqueue: async () => true })
      .readBudgetPlan(org.orgId, Date.now());
    const perTick = Math.floor((budget.plan.perHour.audit * 0.51) / 60);
    expect(perTick).toBe(4);

    const today = utcDate(Date.now());
    // The 90-day lookback is cut at the backfill's first day, 40 days back.
    const strata = auditStrata(today, 90, utcDate(Date.now() - 40 * DAY_MS));
    expect(strata.history.length).toBeGreaterThanOrEqual(1);
    const uids = new Set(sandbox.truth.users().map((u) => u.uid));
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const { plan } = await tick();
      expect(plan.cells).toBe(4);
      expect(plan.population).toBe(8 * 7 * (1 + strata.history.length));
      const run = (
        await sql<{ population_recent: number; population_history: number }>`
          select population_recent, population_history from validic_sync.audits where id = ${plan.auditId}`.execute(
          db.warehouse.db,
        )
      ).rows[0]!;
      expect({ recent: Number(run.population_recent), history: Number(run.population_history) }).toEqual(
        stratumPopulations(8, 7, strata.history.length),
      );
      const cells = await auditedCells(plan.auditId);
      // Half recent, half history (recentShare ½), distinct, of known users; the backfill covered them all.
      expect(cells.filter((c) => c.stratum === 'recent')).toHaveLength(2);
      expect(cells.filter((c) => c.stratum === 'history')).toHaveLength(2);
      for (const c of cells) {
        expect(uids.has(c.uid)).toBe(true);
        expect(['complete', 'drift']).toContain(c.outcome);
        if (c.stratum === 'history') expect(strata.history.map((w) => w.startDate)).toContain(c.start_date);
        seen.add(c.uid);
      }
    }
    // 24 cells drawn at random over 8 users: more than the 4 a single stretch of the uid order would give.
    expect(seen.size).toBeGreaterThan(4);
  });

  it('shows what it found in status and /metrics', async () => {
    // Drift in every cell that holds records on the platform: every record gone.
    await sql`delete from validic.records`.execute(db.warehouse.db);
    const found = (await tick()).cells;
    const drift = found.reduce((n, c) => n + c.result.totals.cells.drift, 0);
    const missing = found.reduce((n, c) => n + c.result.totals.records.missing, 0);

    const status = await collectSyncStatus({
      warehouse: db.warehouse,
      orgIds: [sandbox.orgId],
      config,
    });
    const audit = status.orgs.find((o) => o.orgId === sandbox.orgId)!.audit;
    expect(audit.lastRun).toMatchObject({ kind: 'schedule', planned: 4 });
    expect(audit.last24h.cells.complete + audit.last24h.cells.drift).toBe(28);
    expect(audit.last24h.cells.unsynced).toBe(0);
    expect(audit.last24h.records.missing).toBe(missing);
    expect(audit.driftPerDay[0]).toMatchObject({ day: utcDate(Date.now()), cells: 28, unsynced: 0 });
    expect(audit.completeness.notYetSynced).toEqual({ recent: 0, history: 0 });
    const sampled = (audit.completeness.recent?.sampled ?? 0) + (audit.completeness.history?.sampled ?? 0);
    expect(sampled).toBeGreaterThan(0);
    // A cell counts once, by its first audit: at most the 28 audits of the day, and each stratum's
    // population is the newest tick's.
    expect(sampled).toBeLessThanOrEqual(28);
    expect(audit.completeness.recent?.population).toBe(8 * 7);
    for (const e of [audit.completeness.recent, audit.completeness.history])
      if (e) {
        expect(e.lower).toBeLessThanOrEqual(e.estimate);
        expect(e.estimate).toBeLessThanOrEqual(e.upper);
      }

    const metrics = createWorkerMetrics({
      audit: async () => [
        {
          orgId: sandbox.orgId,
          ...(await readAuditStatus(db.warehouse.db, sandbox.orgId, new Date(), config.audit.estimateDays)),
        },
      ],
    });
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      `validic_sync_audit_cells_total{org="${sandbox.orgId}",outcome="drift"} ${audit.allTime.cells.drift}`,
    );
    expect(text).toContain(
      `validic_sync_audit_records_total{org="${sandbox.orgId}",outcome="missing"} ${audit.allTime.records.missing}`,
    );
    expect(text).toMatch(
      /validic_sync_audit_completeness_ratio\{org="[^"]+",stratum="(recent|history)",bound="upper"\} /,
    );
    expect(text).toContain(
      `validic_sync_audit_last_run_timestamp_seconds{org="${sandbox.orgId}",kind="schedule"}`,
    );
    // The tick found exactly what was removed: every record the platform holds in its cells, and drift in
    // the cells that hold any.
    expect({ missing, drift }).toEqual(await truthOfCells(audit.lastRun!.id, db));
  });

  it('judges nothing before a sync has covered the days: quiet on a first start, loud on a hole after it', async () => {
    const fresh = await createTestDatabase();
    const own = await openRuntime(config, silentLogger, { warehouse: fresh.warehouse, useRedis: false });
    try {
      // The users are listed, nothing is synced yet: what a first start looks like in its first minute.
      const runner = createInlineRunner(own, new AbortController().signal, 1);
      runner.enqueue('users.sync', { orgId: sandbox.orgId });
      expect((await runner.drain()).map((f) => f.error.message)).toEqual([]);
      const first = await tick(own);
      expect(first.plan.cells).toBe(4);
      for (const c of await auditedCells(first.plan.auditId, fresh)) expect(c.outcome).toBe('unsynced');
      // No request was spent on them, nothing was loaded, and nothing reads as drift.
      expect(first.cells.reduce((n, c) => n + c.result.totals.records.repaired, 0)).toBe(0);
      const quiet = await readAuditStatus(fresh.warehouse.db, sandbox.orgId, new Date(), 7);
      expect(quiet.completeness.recent).toBeNull();
      expect(quiet.completeness.history).toBeNull();
      expect(quiet.completeness.notYetSynced.recent + quiet.completeness.notYetSynced.history).toBe(4);
      expect(quiet.last24h.cells).toEqual({ complete: 0, drift: 0, failed: 0, unsynced: 4 });
      const metrics = createWorkerMetrics({
        audit: async () => [{ orgId: sandbox.orgId, ...quiet }],
      });
      // The alert's gauge is absent, so ValidicSyncAuditDrift cannot fire.
      expect(await metrics.registry.metrics()).not.toContain('validic_sync_audit_completeness_ratio{');

      // A sync covers the days (the same backfill as above), then a hole is cut into them: judged, drift.
      const backfill = await runCli(
        ['backfill', '--from', utcDate(Date.now() - 40 * DAY_MS), '--to', utcDate(Date.now())],
        sandboxEnv(sandbox, { DATABASE_URL: fresh.url }),
      );
      expect(backfill.code, backfill.stderr).toBe(0);
      await sql`delete from validic.records`.execute(fresh.warehouse.db);
      const after = await tick(own);
      const judged = await auditedCells(after.plan.auditId, fresh);
      expect(judged.map((c) => c.outcome).filter((o) => o === 'unsynced')).toEqual([]);
      const loud = await readAuditStatus(fresh.warehouse.db, sandbox.orgId, new Date(), 7);
      expect((loud.completeness.recent?.sampled ?? 0) + (loud.completeness.history?.sampled ?? 0)).toBe(4);
      const truth = await truthOfCells(after.plan.auditId, fresh);
      expect(truth.drift).toBeGreaterThan(0);
      expect(judged.filter((c) => c.outcome === 'drift')).toHaveLength(truth.drift);
      const lowest = Math.min(loud.completeness.recent?.upper ?? 1, loud.completeness.history?.upper ?? 1);
      expect(lowest).toBeLessThan(1);
    } finally {
      await own.close();
      await fresh.drop();
    }
  });
});
