/**
 * `validic-sync legacy` end to end: the real CLI against the sandbox's legacy API with the wrap-around
 * `next`, the 200 cap on latest, 429s and 5xx on legacy paths; `validic.legacy_records` must equal the
 * sandbox truth (every (object, _id) with its current last_updated and body), also after records are
 * updated (they reappear in later `last_updated` windows), and after the scheduled legacy.sync continues
 * from the cursors.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime } from '../../src/worker/runtime.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import {
  compareLegacyWithTruth,
  NO_LEGACY_DIFFERENCES as NONE,
} from '../helpers/compare-legacy-with-truth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

const ALL_OBJECTS = 'fitness,routine,nutrition,sleep,weight,diabetes,biometrics,tobacco_cessation';
const DAYS = 30;

describe('legacy against the sandbox with faults', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let configDir: string;
  let configFile: string;

  beforeAll(async () => {
    sandbox = await startSandbox({
      seed: 23,
      users: 12,
      days: DAYS,
      faults: {
        legacyNextWraps: true,
        latestLimitCap: 200,
        // High enough that the ~10 requests of one run surely meet both kinds of fault.
        rate429: 0.25,
        retryAfterSeconds: null,
        rate5xx: 0.25,
        paths: ['/v1/'],
      },
    });
    db = await createTestDatabase();
    configDir = await mkdtemp(join(tmpdir(), 'validic-legacy-'));
    configFile = join(configDir, 'config.json');
    // Windows of 40 days: the routine window holds all ~360 routine records, well over the 200 a capped
    // latest page carries (20-day windows held ~200 and made the multi-page check depend on the hour).
    await writeFile(
      configFile,
      JSON.stringify({ sync: { legacyWindowHours: 960, legacyOverlapMinutes: 10 } }),
    );
  });
  afterAll(async () => {
    await sandbox?.close();
    await db?.drop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  async function legacyCursorEnds(): Promise<number[]> {
    const rows = await sql<{ value: { end: string } }>`
      select value from validic_sync.checkpoints where key like 'legacy:latest:%'`.execute(db.warehouse.db);
    return rows.rows.map((r) => Date.parse(r.value.end));
  }

  it('lands exactly the truth, catches updates in later windows, and continues from the cursors', async () => {
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
    const routineCount = sandbox.truth.legacyRecords('routine').length;
    expect(routineCount).toBeGreaterThan(220);
    // Generated last_updated values lie up to a day in the future of the data's days: end the range later.
    const to = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const first = await runCli(
      ['-c', configFile, 'legacy', '--from', `${DAYS + 2}d`, '--to', to, '--objects', ALL_OBJECTS],
      env,
    );
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toContain(sandbox.legacyToken);
    expect(first.stdout).toMatch(/: done in/);
    expect(first.stdout).toMatch(/retries [1-9]/);
    expect(first.stdout).toMatch(/inserted [1-9]\d*, updated 0, unchanged \d+, quarantined 0/);
    expect(sandbox.control.stats().rateLimited).toBeGreaterThan(0);
    // More successful requests than windows: capped windows took several pages.
    const [, windows, requests, retries] = /windows \d+\/(\d+) \| requests (\d+) \(retries (\d+)\)/
      .exec(first.stdout)!
      .map(Number);
    expect(requests! - retries!).toBeGreaterThan(windows!);
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NONE);

    const cursors = await sql<{ key: string; value: { end: string } }>`
      select key, value from validic_sync.checkpoints where key like 'legacy:latest:%' order by key`.execute(
      db.warehouse.db,
    );
    expect(cursors.rows.map((r) => r.key)).toEqual(
      ALL_OBJECTS.split(',')
        .sort()
        .map((o) => `legacy:latest:${o}`),
    );
    // A range reaching into the future moves the cursor only up to when it was fetched.
    for (const row of cursors.rows) expect(Date.parse(row.value.end)).toBeLessThanOrEqual(Date.now());

    // Old records change: their new last_updated puts them in the latest window, far from their first one.
    const old = (object: 'routine' | 'fitness' | 'sleep') =>
      sandbox.truth
        .legacyRecords(object)
        .filter((r) => Date.parse(r.last_updated) < Date.now() - 10 * 86_400_000)
        .slice(0, 3);
    const changed = [...old('routine'), ...old('fitness'), ...old('sleep')];
    expect(changed).toHaveLength(9);
    for (const r of changed)
      sandbox.control.updateLegacyRecord(r.object, r._id, { extras: { edited: true } });
    const user = sandbox.truth.legacyUsers()[0]!;
    sandbox.control.addLegacyRecord({ object: 'weight', user_id: user._id });

    const second = await runCli(['-c', configFile, 'legacy', '--from', '2d', '--to', to], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/inserted 1, updated 9,/);
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NONE);

    // The scheduled path: legacy.sync without a range continues from each object's cursor.
    for (const r of changed.slice(0, 2)) {
      sandbox.control.updateLegacyRecord(r.object, r._id, { extras: { edited: 'twice' } });
    }
    sandbox.control.addLegacyRecord({ object: 'diabetes', user_id: user._id });
    // A cursor covers whole seconds of the platform's clock, the second in progress excluded: let the
    // platform's clock pass the cursors the run above left, so each window below has a second to add.
    const lastEnd = Math.max(...(await legacyCursorEnds()));
    await waitForStep(
      "the platform's clock three seconds past the cursors",
      () => expect(Date.parse(sandbox.control.now())).toBeGreaterThan(lastEnd + 3000),
      { timeout: 10_000, interval: 50 },
    );
    const config = loadConfig({ ...env, DATABASE_URL: undefined }, { cwd: configDir });
    const runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
    try {
      const runner = createInlineRunner(runtime, new AbortController().signal, 4);
      const windows: { object: string; startDate: string; cursorMoved: boolean }[] = [];
      runner.on('completed', (job, result: any) => {
        if (job.name === 'legacy.latest') windows.push(result);
      });
      runner.enqueue('legacy.sync', { orgId: sandbox.orgId });
      expect(await runner.drain()).toEqual([]);
      // One short window per configured object, starting at its cursor minus the overlap.
      expect(windows.map((w) => w.object).sort()).toEqual(
        config.organizations[0]!.legacy.objects.slice().sort(),
      );
      const routineCursor = cursors.rows.find((r) => r.key === 'legacy:latest:routine')!.value.end;
      const routineWindow = windows.find((w) => w.object === 'routine')!;
      expect(Date.parse(routineWindow.startDate)).toBeGreaterThanOrEqual(
        Date.parse(routineCursor) - 10 * 60_000,
      );
      expect(windows.every((w) => w.cursorMoved)).toBe(true);
    } finally {
      await runtime.close();
    }
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NONE);
    const arrived = await sql<{ arrived_via: string }>`
      select distinct arrived_via from validic.legacy_records`.execute(db.warehouse.db);
    expect(arrived.rows.map((r) => r.arrived_via)).toEqual(['legacy']);
  });

  it('names the fix for bad arguments', async () => {
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
    const reversed = await runCli(['legacy', '--from', 'now', '--to', '2d'], env);
    expect(reversed.code).toBe(2);
    expect(reversed.stderr).toMatch(/earlier than --to/);
    const unknown = await runCli(['legacy', '--from', '2d', '--objects', 'steps'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/fitness, routine/);
  });
});
