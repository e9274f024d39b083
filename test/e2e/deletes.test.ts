/**
 * Deletes of every kind reach the warehouse, end to end against the sandbox over HTTP and checked
 * against its truth:
 * - v2 records deleted with their checksum kept (the platform's checksum need not cover deleted_at);
 * - v2 users gone from the platform: found by a 404 on their windows and by a complete users listing,
 *   no longer polled, and un-removed when listed again;
 * - legacy records deleted on the platform: found by a complete re-read of their window, and by the
 *   404 of a push-announced record.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import type { InlineRunner } from '../../src/queue/inline-runner.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { compareLegacyWithTruth, NO_LEGACY_DIFFERENCES } from '../helpers/compare-legacy-with-truth.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const DAYS = 12;
const ALL_OBJECTS = 'fitness,routine,nutrition,sleep,weight,diabetes,biometrics,tobacco_cessation';
const DAY_MS = 86_400_000;
const utcDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('deletes of every kind reach the warehouse', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let runtime: Runtime;
  let env: NodeJS.ProcessEnv;
  let configDir: string;
  let configFile: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 41, users: 4, days: DAYS, faults: { deleteKeepsChecksum: true } });
    db = await createTestDatabase();
    env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
    configDir = await mkdtemp(join(tmpdir(), 'validic-deletes-'));
    configFile = join(configDir, 'config.json');
    // Four-day legacy windows: a few requests per object, and windows that can be re-read alone.
    await writeFile(
      configFile,
      JSON.stringify({ sync: { legacyWindowHours: 96, legacyOverlapMinutes: 10 } }),
    );
    const config = loadConfig({ ...env, DATABASE_URL: undefined }, { cwd: configDir, file: configFile });
    runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
  });
  afterAll(async () => {
    await runtime?.close();
    await sandbox?.close();
    await db?.drop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  /** Runs `name` and every job it enqueues inline; returns the completed jobs with their results. */
  async function runJobs(name: string, payload: unknown) {
    const runner: InlineRunner = createInlineRunner(runtime, new AbortController().signal, 2);
    const completed: { name: string; payload: any; result: any }[] = [];
    runner.on('completed', (job, result) => completed.push({ name: job.name, payload: job.payload, result }));
    runner.enqueue(name, payload);
    const failures = await runner.drain();
    return { completed, failures: failures.map((f) => `${f.job.name}: ${f.error.message}`) };
  }

  // Connection events of the generated users start some days before their first records.
  const backfill = () =>
    runCli(
      ['backfill', '--from', utcDate(Date.now() - (DAYS + 20) * DAY_MS), '--to', utcDate(Date.now())],
      env,
    );

  it('v2 records deleted with their checksum kept are marked deleted, once', async () => {
    const first = await backfill();
    expect(first.code, first.stderr).toBe(0);
    // The seeded data already holds deletes that kept their checksum.
    const seededDeletes = sandbox.truth.records().filter((r) => r.deleted_at);
    expect(seededDeletes.length).toBeGreaterThan(0);
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);

    const live = sandbox.truth.records().filter((r) => !r.deleted_at);
    const targets = [live[0]!, live[Math.floor(live.length / 2)]!, live[live.length - 1]!];
    for (const record of targets) {
      const deleted = sandbox.control.deleteRecord(record.id);
      expect(deleted.checksum).toBe(record.checksum);
    }
    const second = await backfill();
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/records: inserted 0, updated 3,/);
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);
    const marked = await sql<{ id: string }>`
      select id from validic.records where deleted_at is not null and id in (${sql.join(targets.map((t) => t.id))})`.execute(
      db.warehouse.db,
    );
    expect(marked.rows).toHaveLength(3);

    // The same deleted versions again write nothing.
    const third = await backfill();
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toMatch(/records: inserted 0, updated 0,/);
  });

  it('users gone from the platform are marked removed, no longer polled, and un-removed when back', async () => {
    const removedAt = async (uid: string) =>
      (
        await db.warehouse.db
          .selectFrom('validic.users')
          .select('removed_at')
          .where('org_id', '=', sandbox.orgId)
          .where('uid', '=', uid)
          .executeTakeFirstOrThrow()
      ).removed_at;
    const polled = (jobs: { name: string; payload: any }[]) =>
      new Set(jobs.filter((j) => j.name === 'records.poll').map((j) => j.payload.uid));
    const [gone404, goneListed] = sandbox.truth.users().map((u) => u.uid);

    // Deleted on the platform, still listed in the warehouse: its windows answer 404, so does the user.
    sandbox.control.deleteUser(gone404!);
    const recent = await runJobs('records.recent', { orgId: sandbox.orgId, lookbackDays: 2 });
    expect(recent.failures).toEqual([]);
    const removedPoll = recent.completed.find((j) => j.name === 'records.poll' && j.payload.uid === gone404);
    expect(removedPoll?.result).toMatchObject({ userRemoved: true, records: 0 });
    expect(await removedAt(gone404!)).toBeInstanceOf(Date);

    // Deleted and then absent from a complete listing.
    sandbox.control.deleteUser(goneListed!);
    const listing = await runJobs('users.sync', { orgId: sandbox.orgId });
    expect(listing.failures).toEqual([]);
    expect(listing.completed[0]?.result.removed).toEqual([goneListed]);
    expect(await removedAt(goneListed!)).toBeInstanceOf(Date);

    // The recent-poll tick polls each user once per sweep period (validic_sync.recent_polls): forget the
    // last polls so every pollable user is due again, as after a period.
    const newSweep = () => db.warehouse.db.deleteFrom('validic_sync.recent_polls').execute();
    await newSweep();
    // Neither is polled any more; the others are, and no job fails.
    const again = await runJobs('records.recent', { orgId: sandbox.orgId, lookbackDays: 2 });
    expect(again.failures).toEqual([]);
    expect([...polled(again.completed)].sort()).toEqual(
      sandbox.truth
        .users()
        .map((u) => u.uid)
        .sort(),
    );

    // One comes back: the next complete listing un-removes it and it is polled again.
    sandbox.control.addUser({ uid: gone404! });
    await runJobs('users.sync', { orgId: sandbox.orgId });
    expect(await removedAt(gone404!)).toBeNull();
    expect(await removedAt(goneListed!)).toBeInstanceOf(Date);
    await newSweep();
    const back = await runJobs('records.recent', { orgId: sandbox.orgId, lookbackDays: 2 });
    expect(back.failures).toEqual([]);
    expect(polled(back.completed).has(gone404!)).toBe(true);
    expect(polled(back.completed).has(goneListed!)).toBe(false);
    expect((await compareWithTruth(db.warehouse, sandbox)).missingUsers).toEqual([]);
  });

  it('legacy records deleted on the platform are marked deleted, and left out of the views', async () => {
    const to = new Date(Date.now() + 2 * DAY_MS).toISOString();
    const legacy = (from: string, until: string) =>
      runCli(['-c', configFile, 'legacy', '--from', from, '--to', until, '--objects', ALL_OBJECTS], env);
    const first = await legacy(`${DAYS + 2}d`, to);
    expect(first.code, first.stderr).toBe(0);
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NO_LEGACY_DIFFERENCES);

    // Old records: one routine and one weight deleted, one routine edited (its new last_updated is now).
    const cutoff = Date.now() - 6 * DAY_MS;
    const old = (object: 'routine' | 'weight') =>
      sandbox.truth.legacyRecords(object).filter((r) => Date.parse(r.last_updated) < cutoff);
    const [deletedRoutine, editedRoutine] = old('routine');
    const [deletedWeight] = old('weight');
    sandbox.control.deleteLegacyRecord('routine', deletedRoutine!._id);
    sandbox.control.deleteLegacyRecord('weight', deletedWeight!._id);
    sandbox.control.updateLegacyRecord('routine', editedRoutine!._id, { extras: { edited: true } });

    // A complete re-read of the old windows, which no longer list any of the three: the deleted two
    // answer 404 by id and are marked; the edited one is found and its new version loaded.
    const reread = await legacy(`${DAYS + 2}d`, new Date(cutoff).toISOString());
    expect(reread.code, reread.stderr).toBe(0);
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NO_LEGACY_DIFFERENCES);
    const deletedRows = await sql<{ id: string }>`
      select id from validic.legacy_records where deleted_at is not null order by id`.execute(
      db.warehouse.db,
    );
    expect(deletedRows.rows.map((r) => r.id)).toEqual([deletedRoutine!._id, deletedWeight!._id].sort());
    const inView = await sql<{ n: number }>`
      select count(*)::int as n from validic.legacy_routine where id = ${deletedRoutine!._id}`.execute(
      db.warehouse.db,
    );
    expect(inView.rows[0]!.n).toBe(0);

    // A push-announced record deleted before the fetch: the 404 marks the stored row.
    const announced = sandbox.truth.legacyRecords('weight')[0]!;
    sandbox.control.deleteLegacyRecord('weight', announced._id);
    const fetched = await runJobs('legacy.fetch', {
      orgId: sandbox.orgId,
      object: 'weight',
      recordId: announced._id,
      userId: announced.user_id,
    });
    expect(fetched.failures).toEqual([]);
    expect(fetched.completed[0]?.result).toMatchObject({ mode: 'record', deleted: true });
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NO_LEGACY_DIFFERENCES);

    // Re-reading everything changes nothing more: deleted rows stay deleted, nothing else is marked.
    const last = await legacy(`${DAYS + 2}d`, to);
    expect(last.code, last.stderr).toBe(0);
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NO_LEGACY_DIFFERENCES);
    const stillDeleted = await sql<{ n: number }>`
      select count(*)::int as n from validic.legacy_records where deleted_at is not null`.execute(
      db.warehouse.db,
    );
    expect(stillDeleted.rows[0]!.n).toBe(3);
  });
});
