/**
 * The first start's scenario (test/e2e/worker-first-start*.test.ts): `validic-sync worker` (the real
 * CLI, streams and schedules on) started on an empty warehouse against a sandbox whose users have records
 * of the last 3 days created before the stream exists, with a live feed throughout, under one reading of
 * where a new stream begins (`newStreamStart`).
 *
 * The first recent sweep is paced by the request budget (a few users a tick, as in production) and the
 * stream is heard within seconds; the sweep used to stop right there, and the records created before the
 * stream began, of every user it had not reached, never arrived. Checked: `status` says the first sync is
 * complete, with every user; a simulated hour later (the worker's hourly reconciliation pass and scheduled
 * audit have run since) the warehouse equals the sandbox's truth, no gap is open, the recent poll is off
 * (the stream carries freshness), the scheduled audits since found no drift, and `audit --from 29d --to
 * today --sample 100%` (the last 30 days, every cell) finds 0 drift.
 *
 * Accelerated ×SPEED: the schedules' minutes and the tick are divided by it and the request budget
 * multiplied by it, so the plan is the one of real time. Not scaled: the stream's timing (the sandbox
 * pokes in real seconds) and the scheduled audit's settle time (stream latency does not shrink with the
 * clock). The sandbox's 3 days lie within the recent poll's lookback (3 days and the edge day): all of
 * it is what the first sync is meant to cover, so the warehouse must equal the truth.
 *
 * Not asserted: the alerts themselves (Prometheus rules over /metrics), nor the scheduled audit's ticks
 * before the first sync completed (the audit's quiet start-up is not the first sync's); they are logged.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { FirstSyncStatus } from '../../src/budget/first-sync.ts';
import type { BudgetStatus } from '../../src/budget/read-budget-plan.ts';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/index.ts';
import type { Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { runCli } from './cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from './compare-with-truth.ts';
import type { TestRedis } from './redis.ts';
import { useSandbox, useTempDir, useTestRedis } from './use-before-all.ts';
import { useTestDatabase } from './use-test-database.ts';
import { waitForStep } from './wait-for-step.ts';
import { startWorkerChild, workerChildEnv } from './worker-fleet.ts';

const SPEED = 120;

/** What the first start's tests read of `status --json`. */
export interface OrgStatus {
  orgId: string;
  firstSync: FirstSyncStatus;
  budget: BudgetStatus;
  stream: { gaps: { open: number } };
}

/** The org's part of `status --json`, run as a user would. */
export async function readOrgStatus(env: NodeJS.ProcessEnv, orgId: string): Promise<OrgStatus> {
  const result = await runCli(['status', '--json'], env);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout).orgs as OrgStatus[]).find((o) => o.orgId === orgId)!;
}

/**
 * A worker child's environment for the first start: streams and schedules on, ×SPEED (the schedules'
 * minutes and the tick ÷ SPEED, the request budget × SPEED), the org's resources when given.
 */
export async function firstStartEnv(options: {
  sandbox: Sandbox;
  databaseUrl: string;
  redis: TestRedis;
  dir: { writeJson(name: string, config: unknown): Promise<string> };
  requestsPerHour: number;
  resources?: string[];
  extra?: Record<string, string>;
}): Promise<NodeJS.ProcessEnv> {
  const minutes = (m: number) => m / SPEED;
  const configFile = await options.dir.writeJson('config.json', {
    worker: { concurrency: 8 },
    schedules: {
      usersSyncMinutes: minutes(60),
      recentPollMinutes: minutes(60),
      reconcileStreamMinutes: minutes(60),
      auditMinutes: minutes(60),
      reconcileMinutes: minutes(1440),
    },
    budget: {
      tickSeconds: 60 / SPEED,
      dormantPollMinutes: minutes(1440),
      streamRequestsPerConnectionHour: 12 * SPEED,
    },
    organizations: options.resources ? [{ resources: options.resources }] : [],
  });
  return workerChildEnv(options.sandbox, options.databaseUrl, options.redis, {
    VALIDIC_SCHEDULES: 'true',
    VALIDIC_WORKER_STREAMS: 'true',
    VALIDIC_SYNC_CONFIG: configFile,
    VALIDIC_REQUESTS_PER_HOUR: String(options.requestsPerHour * SPEED),
    ...options.extra,
  });
}

/**
 * Waits until the first sync is complete, read from the warehouse; a timeout says how far it got (users
 * covered, polls of the recent poll in flight).
 */
export async function waitForFirstSync(warehouse: Warehouse, timeout: number): Promise<void> {
  await waitForStep(
    'the first sync to complete',
    async () => {
      const { rows } = await sql<{ completed: boolean; covered: number; users: number; in_flight: number }>`
        select
          coalesce((select completed_at is not null from validic_sync.first_syncs), false) as completed,
          (select count(distinct uid)::int from validic_sync.first_sync_polls) as covered,
          (select count(*)::int from validic.users where removed_at is null) as users,
          (select count(*)::int from validic_sync.recent_polls
            where enqueued_at is not null and (polled_at is null or polled_at < enqueued_at)) as in_flight`.execute(
        warehouse.db,
      );
      expect(rows[0]!.completed, JSON.stringify(rows[0])).toBe(true);
    },
    { timeout, interval: 500 },
  );
}

export interface FirstStartCase {
  users: number;
  /** The token's limit per (simulated) hour. */
  requestsPerHour: number;
  newStreamStart: NonNullable<SandboxOptions['newStreamStart']>;
  /** The org's resources (default: all seven); the sandbox's mix should make only these. */
  resources?: string[];
  mix?: SandboxOptions['mix'];
}

export function describeFirstStart(c: FirstStartCase): void {
  describe(`a worker started on an empty warehouse, ${c.users} users, a new stream beginning at its ${c.newStreamStart}`, () => {
    const sandbox = useSandbox({
      seed: 61,
      users: c.users,
      days: 3,
      newStreamStart: c.newStreamStart,
      pokeIntervalMs: 1000,
      ...(c.mix ? { mix: c.mix } : {}),
    });
    const db = useTestDatabase();
    const redis = useTestRedis(`first-start-${c.users}-${c.newStreamStart}`);
    const dir = useTempDir('first-start-');

    it('covers every user from before the stream began: status says so, the audit finds no drift', async () => {
      const organizations = c.resources ? [{ resources: c.resources }] : [];
      const env = await firstStartEnv({ sandbox, databaseUrl: db.url, redis, dir, ...c });
      const status = () => readOrgStatus(env, sandbox.orgId);

      sandbox.control.startLiveFeed({ ratePerSecond: 5 });
      const worker = await startWorkerChild(env);
      try {
        // Waited for in the warehouse (a status process a second would take a core from the worker).
        await waitForFirstSync(db.warehouse, 180_000);
        const first = (await status()).firstSync;
        expect(first).toMatchObject({
          state: 'complete',
          users: c.users,
          pending: 0,
          streamName: 'validic-sync',
        });
        const completedAt = new Date(first.completedAt!);

        // An hour later: the worker's hourly reconciliation pass and scheduled audit have run since.
        await waitForStep(
          "an hourly reconciliation pass and audit tick after the first sync's completion",
          async () => {
            const { rows } = await sql<{ passes: number; audits: number }>`
              select
                (select count(*)::int from validic_sync.reconcile_passes
                  where started_at > ${completedAt} and outcome = 'caught-up') as passes,
                (select count(*)::int from validic_sync.audits
                  where kind = 'schedule' and started_at > ${completedAt}) as audits`.execute(
              db.warehouse.db,
            );
            expect(rows[0]!.passes).toBeGreaterThan(0);
            expect(rows[0]!.audits).toBeGreaterThan(0);
          },
          { timeout: 120_000, interval: 1000 },
        );
        sandbox.control.stopLiveFeed();

        await waitForStep(
          'the warehouse to equal the truth',
          async () => expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES),
          { timeout: 60_000, interval: 500 },
        );
        const org = await status();
        expect(org.firstSync).toMatchObject({ state: 'complete', users: c.users });
        expect(org.stream.gaps.open).toBe(0);
        expect(org.budget.recentPoll).toMatchObject({ mode: 'fallback', polling: false, firstSync: false });
        const text = await runCli(['status'], env);
        expect(text.stdout).toContain(`first sync: complete`);
        expect(text.stdout).toContain(`${c.users} users polled over ${first.from}..${first.to}`);
        // The scheduled audits since the first sync completed found nothing.
        const audits = await sql<{ drift: number; cells: number }>`
          select coalesce(sum(cells_drift), 0)::int as drift,
            coalesce(sum(cells_complete + cells_drift), 0)::int as cells
          from validic_sync.audits where kind = 'schedule' and started_at > ${completedAt}`.execute(
          db.warehouse.db,
        );
        expect(audits.rows[0]!.drift).toBe(0);
        expect(audits.rows[0]!.cells).toBeGreaterThan(0);
        const early = await sql<{ audits: number; drift: number; repaired: number }>`
          select count(*)::int as audits, coalesce(sum(cells_drift), 0)::int as drift,
            coalesce(sum(records_repaired), 0)::int as repaired
          from validic_sync.audits where kind = 'schedule' and started_at <= ${completedAt}`.execute(
          db.warehouse.db,
        );
        console.log(
          `first start, ${c.users} users, stream from its ${c.newStreamStart}: first sync ${first.startedAt}..${first.completedAt}; scheduled audits before it completed: ${JSON.stringify(early.rows[0])}`,
        );

        // The audit a user would run: every cell of the last 30 days, compared with the platform.
        const auditConfig = await dir.writeJson('audit.json', {
          audit: { settleMinutes: 0 },
          sync: { concurrency: 8 },
          organizations,
        });
        const audit = await runCli(
          ['audit', '--from', '29d', '--to', 'today', '--sample', '100%', '--fail-on-drift'],
          { ...env, REDIS_URL: undefined, VALIDIC_SYNC_CONFIG: auditConfig },
          { timeoutMs: 170_000 },
        );
        expect(audit.code, audit.stdout + audit.stderr).toBe(0);
        expect(audit.stdout).toMatch(/cells: complete \d+, drift 0\n/);
        expect(audit.stdout).toMatch(/records: equal [1-9]\d*, missing 0, stale 0, extra 0; repaired 0\n/);
      } finally {
        sandbox.control.stopLiveFeed();
        const stopped = await worker.stop();
        expect(stopped.code, stopped.stderr.slice(-2000)).toBe(0);
      }
    }, 600_000);
  });
}
