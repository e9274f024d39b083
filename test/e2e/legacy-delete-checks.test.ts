/**
 * Legacy delete checks cost one request per suspect, so they are budgeted: at most
 * `legacy.deleteChecksPerPass` per pass, and never more than `legacy.deleteCheckShare` of the usable
 * requests over the last hour (counted in Postgres, so the share holds across passes, runs and
 * processes). Here: 3 per pass and a share worth 5 an hour; eight records deleted on the platform, all
 * in one window, are worked off over several passes and two "hours", and what lands in the end equals
 * the sandbox's truth.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { legacyDeleteCheckBudget } from '../../src/legacy/confirm-legacy-deletes.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { LEGACY_OBJECTS } from '../../src/validic/platform-limits.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import {
  compareLegacyWithTruth,
  NO_LEGACY_DIFFERENCES as NONE,
} from '../helpers/compare-legacy-with-truth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const DAYS = 6;
const DAY_MS = 86_400_000;

describe('legacy delete checks within their budget', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let runtime: Runtime;
  let configDir: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 13, users: 4, days: DAYS });
    db = await createTestDatabase();
    configDir = await mkdtemp(join(tmpdir(), 'validic-delete-checks-'));
    const configFile = join(configDir, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        // One window over the whole range: every suspect lies in it, so the per-pass cap binds.
        sync: { legacyWindowHours: (DAYS + 4) * 24, legacyOverlapMinutes: 10 },
        // The test environment allows 10,000,000 requests an hour (usable 9,499,980): 6e-7 of it is 5.
        organizations: [{ legacy: { deleteChecksPerPass: 3, deleteCheckShare: 6e-7 } }],
      }),
    );
    const env = sandboxEnv(sandbox, { DATABASE_URL: undefined });
    const config = loadConfig(env, { cwd: configDir, file: configFile });
    expect(legacyDeleteCheckBudget(config.organizations[0]!)).toEqual({ perPass: 3, perHour: 5 });
    runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
  });
  afterAll(async () => {
    await runtime?.close();
    await sandbox?.close();
    await db?.drop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  /** legacy.sync over the whole range, inline; the routine window's result. */
  async function syncAll() {
    const runner = createInlineRunner(runtime, new AbortController().signal, 2);
    const windows: any[] = [];
    runner.on('completed', (job, result) => {
      if (job.name === 'legacy.latest') windows.push(result);
    });
    // One clock reading: from two, a millisecond passing between them made the range 1 ms longer than
    // the window, and a second routine window of 10 minutes (the overlap) appeared (seen under load).
    const now = Date.now();
    runner.enqueue('legacy.sync', {
      orgId: sandbox.orgId,
      objects: [...LEGACY_OBJECTS],
      from: new Date(now - (DAYS + 2) * DAY_MS).toISOString(),
      to: new Date(now + 2 * DAY_MS).toISOString(),
    });
    expect((await runner.drain()).map((f) => f.error.message)).toEqual([]);
    expect(windows.every((w) => w.deleteChecks <= 3)).toBe(true);
    const routine = windows.filter((w) => w.object === 'routine');
    expect(routine).toHaveLength(1);
    return routine[0] as {
      absent: number;
      deleteChecks: number;
      deleted: number;
      deleteChecksPending: number;
    };
  }

  const pushAndReconcile = async () => {
    const context = runtime.jobContext({
      jobId: 'plan',
      attempt: 1,
      signal: new AbortController().signal,
      enqueue: async () => false,
    });
    return (await context.readBudgetPlan(sandbox.orgId, Date.now())).plan.perHour.pushAndReconcile;
  };

  const deletedRows = async () =>
    (
      await sql<{ n: number }>`
        select count(*)::int as n from validic.legacy_records where deleted_at is not null`.execute(
        db.warehouse.db,
      )
    ).rows[0]!.n;

  it('asks at most the per-pass cap, stops at the hourly share, and works the rest off later', async () => {
    const first = await syncAll();
    expect(first).toMatchObject({ absent: 0, deleteChecks: 0, deleteChecksPending: 0 });
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NONE);

    const routine = sandbox.truth.legacyRecords('routine');
    expect(routine.length).toBeGreaterThan(12);
    for (const r of routine.slice(0, 8)) sandbox.control.deleteLegacyRecord('routine', r._id);

    // Pass 1: eight suspects, three asked.
    const second = await syncAll();
    expect(second.absent).toBe(8);
    expect(second.deleteChecks).toBe(3);
    expect(second.deleteChecksPending).toBe(5);
    expect(await deletedRows()).toBe(3);
    // Pass 2, same hour: the share (5) leaves two.
    const third = await syncAll();
    expect(third.deleteChecks).toBe(2);
    expect(third.deleteChecksPending).toBe(3);
    // Pass 3, same hour: nothing left of the share.
    const fourth = await syncAll();
    expect(fourth.deleteChecks).toBe(0);
    expect(fourth.deleteChecksPending).toBe(3);
    expect(await deletedRows()).toBe(5);

    // An hour later (the accounting's clock is the database's: age the claims) the rest is asked.
    await sql`update validic_sync.legacy_delete_checks set asked_at = asked_at - interval '2 hours'`.execute(
      db.warehouse.db,
    );
    const beforeLastPass = await pushAndReconcile();
    const fifth = await syncAll();
    expect(fifth.deleteChecks).toBe(3);
    expect(fifth.deleteChecksPending).toBe(0);
    expect(await deletedRows()).toBe(8);
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NONE);

    // The budget plan counts the checks of the last hour with the push and reconcile fetches: the
    // three just asked (the earlier five are more than an hour old now).
    expect((await pushAndReconcile()) - beforeLastPass).toBeCloseTo(3, 6);
  });
});
