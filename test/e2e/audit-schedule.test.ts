/**
 * The scheduled completeness audit (records.audit without a range) against the sandbox over HTTP: a tick
 * audits as many cells as the budget plan's audit share allows, one per user of the rotation, which goes
 * on where the last tick stopped and round to the first user; what it finds reaches `status --json`'s
 * `orgs[].audit` (estimate per stratum, drift per day) and `/metrics`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { Config } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { auditPopulation, readAuditStatus } from '../../src/metrics/audit-status.ts';
import { collectSyncStatus } from '../../src/metrics/sync-status.ts';
import { createWorkerMetrics } from '../../src/metrics/worker-metrics.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { recordTypeOf, toV2Resource } from '../../src/validic/platform-limits.ts';
import { auditRotationCursor, readCursor } from '../../src/warehouse/cursors.ts';
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

  async function tick() {
    const runner = createInlineRunner(runtime, new AbortController().signal, 2);
    const completed: { name: string; payload: any; result: any }[] = [];
    runner.on('completed', (job, result) => completed.push({ name: job.name, payload: job.payload, result }));
    runner.enqueue('records.audit', { orgId: sandbox.orgId });
    const failures = await runner.drain();
    expect(failures.map((f) => f.error.message)).toEqual([]);
    return completed;
  }

  const auditedUids = async (auditId: number) =>
    (
      await sql<{ uid: string }>`
        select uid from validic_sync.audit_cells where audit_id = ${auditId} order by uid collate "C"`.execute(
        db.warehouse.db,
      )
    ).rows.map((r) => r.uid);

  it('audits the budget share a tick, one cell per user, in rotation', async () => {
    const uids = sandbox.truth
      .users()
      .map((u) => u.uid)
      .sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1));
    expect(uids).toHaveLength(8);
    const org = config.organizations[0]!;
    const budget = await runtime
      .jobContext({ jobId: 't', attempt: 1, signal: new AbortController().signal, enqueue: async () => true })
      .readBudgetPlan(org.orgId, Date.now());
    const perTick = Math.floor((budget.plan.perHour.audit * 0.51) / 60);
    expect(perTick).toBe(4);

    const first = await tick();
    const plan = first.find((c) => c.name === 'records.audit' && c.result.population !== undefined)!.result;
    expect(plan.cells).toBe(4);
    // users × resources × (the recent window + one history window): the 90-day lookback is cut at the
    // backfill's first day, 40 days back, so the third window is left out.
    expect(plan.population).toBe(8 * 7 * 2);
    expect(await auditedUids(plan.auditId)).toEqual(uids.slice(0, 4));
    expect(await readCursor(db.warehouse.db, sandbox.orgId, auditRotationCursor())).toEqual({
      afterUid: uids[3],
    });

    const second = (await tick()).find((c) => c.result?.population !== undefined)!.result;
    expect(await auditedUids(second.auditId)).toEqual(uids.slice(4, 8));
    // Round to the first user again.
    const third = (await tick()).find((c) => c.result?.population !== undefined)!.result;
    expect(await auditedUids(third.auditId)).toEqual(uids.slice(0, 4));
    const strata = await sql<{ stratum: string }>`
      select distinct stratum from validic_sync.audit_cells`.execute(db.warehouse.db);
    for (const { stratum } of strata.rows) expect(['recent', 'history']).toContain(stratum);
  });

  it('shows what it found in status and /metrics', async () => {
    // Drift in every cell the next tick reaches: all its users' records gone.
    const next = sandbox.truth
      .users()
      .map((u) => u.uid)
      .sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1))
      .slice(4, 8);
    await sql`delete from validic.records where uid = any(${next}::text[])`.execute(db.warehouse.db);
    const found = (await tick()).filter((c) => c.result?.totals);
    const drift = found.reduce((n, c) => n + c.result.totals.cells.drift, 0);
    const missing = found.reduce((n, c) => n + c.result.totals.records.missing, 0);

    const status = await collectSyncStatus({
      warehouse: db.warehouse,
      orgIds: [sandbox.orgId],
      config,
    });
    const audit = status.orgs.find((o) => o.orgId === sandbox.orgId)!.audit;
    expect(audit.lastRun).toMatchObject({ kind: 'schedule', planned: 4 });
    expect(audit.last24h.cells.complete + audit.last24h.cells.drift).toBe(16);
    expect(audit.last24h.records.missing).toBe(missing);
    expect(audit.driftPerDay[0]).toMatchObject({ day: utcDate(Date.now()), cells: 16 });
    const sampled = (audit.completeness.recent?.sampled ?? 0) + (audit.completeness.history?.sampled ?? 0);
    expect(sampled).toBeGreaterThan(0);
    for (const e of [audit.completeness.recent, audit.completeness.history])
      if (e) {
        expect(e.lower).toBeLessThanOrEqual(e.estimate);
        expect(e.estimate).toBeLessThanOrEqual(e.upper);
      }

    const metrics = createWorkerMetrics({
      audit: async () => [
        {
          orgId: sandbox.orgId,
          ...(await readAuditStatus(
            db.warehouse.db,
            sandbox.orgId,
            new Date(),
            auditPopulation(config, config.organizations[0]!.resources, 8),
          )),
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
    // The tick found exactly what was removed: every record the platform holds in its cells (the sandbox
    // windows by UTC start date), and drift in the cells that hold any.
    const cells = await sql<{ uid: string; resource: string; start_date: string; end_date: string }>`
      select uid, resource, to_char(start_date, 'YYYY-MM-DD') as start_date, to_char(end_date, 'YYYY-MM-DD') as end_date
      from validic_sync.audit_cells where audit_id = ${audit.lastRun!.id}`.execute(db.warehouse.db);
    const inCell = cells.rows.map(
      (c) =>
        sandbox.truth
          .records({ uid: c.uid, type: recordTypeOf(toV2Resource(c.resource)) as never })
          .filter((r) => r.start_time.slice(0, 10) >= c.start_date && r.start_time.slice(0, 10) <= c.end_date)
          .length,
    );
    expect(missing).toBe(inCell.reduce((a, b) => a + b, 0));
    expect(drift).toBe(inCell.filter((n) => n > 0).length);
  });
});
