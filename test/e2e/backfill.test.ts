/**
 * `validic-sync backfill` end to end: the real CLI against the sandbox over HTTP, with faults on, and the
 * warehouse compared with the sandbox's ground truth row for row.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ledgerProgress } from '../helpers/backfill-progress.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { day } from '../helpers/fixtures/index.ts';
import type { TestDatabase } from '../helpers/pg.ts';
import { useSandbox } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

const DAYS = 40;
const range = () => {
  const to = day(0);
  // Connection events of the generated users start some days before their first records.
  const from = day(DAYS + 20);
  return ['--from', from, '--to', to];
};

async function validicTupleWrites(db: TestDatabase): Promise<number> {
  await sql`select pg_stat_clear_snapshot()`.execute(db.warehouse.db);
  const result = await sql<{ n: number }>`
    select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int as n
    from pg_stat_user_tables where schemaname = 'validic'`.execute(db.warehouse.db);
  return result.rows[0]!.n;
}

describe('backfill against the sandbox with faults', () => {
  const sandbox = useSandbox({
    seed: 7,
    users: 5,
    days: DAYS,
    faults: { latencyMs: 2, rate429: 0.08, retryAfterSeconds: null, rate5xx: 0.08, truncateRate: 0.05 },
  });
  const db = useTestDatabase();

  it('lands exactly the truth, and again after the platform changes', async () => {
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
    const first = await runCli(['backfill', ...range()], env);
    expect(first.stderr).not.toContain(sandbox.token);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/done in/);
    expect(sandbox.control.stats().byEndpoint).toBeDefined();
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);

    // Mutate the platform: new versions, deletions, a new user with data, a new connection.
    const records = sandbox.truth.records();
    const updated = records.slice(0, 5).map((r) => sandbox.control.updateRecord(r.id));
    sandbox.control.deleteRecord(records[10]!.id);
    const newcomer = sandbox.control.addUser({ uid: 'newcomer-1' });
    sandbox.control.addRecord({ uid: newcomer.uid, type: 'measurement' });
    sandbox.control.connectSource(newcomer.uid, 'fitbit');

    const second = await runCli(['backfill', ...range()], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/updated [1-9]/);
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);
    const versions = await sql<{ n: number }>`
      select count(*)::int as n from validic.record_versions where record_id in (${sql.join(updated.map((r) => r.id))})`.execute(
      db.warehouse.db,
    );
    expect(versions.rows[0]!.n).toBe(5);
  });
});

describe('backfill killed mid-way resumes', () => {
  // Enough windows (3 per user and resource) and latency that the kill lands mid-run.
  const sandbox = useSandbox({ seed: 11, users: 6, days: 75, faults: { latencyMs: 40 } });
  const db = useTestDatabase();

  const args = () => {
    const to = day(0);
    const from = day(80);
    return ['backfill', '--from', from, '--to', to];
  };

  const doneWindows = () => ledgerProgress(db.warehouse.db);

  it('finishes with the same tables and fewer requests than a fresh run, then refetches without writing', async () => {
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONCURRENCY: '2' });

    const killed = spawnCli(args(), env);
    await waitForStep(
      'twenty backfill windows done, the run unfinished',
      async () => {
        const { done, total } = await doneWindows();
        expect(done).toBeGreaterThanOrEqual(20);
        expect(done).toBeLessThan(total);
      },
      { timeout: 60_000, interval: 20 },
    );
    killed.kill('SIGKILL');
    const killedResult = await killed.result;
    expect(killedResult.signal).toBe('SIGKILL');
    const { done: doneAtKill, total } = await doneWindows();
    expect(doneAtKill).toBeLessThan(total);

    sandbox.control.resetStats();
    const resumed = await runCli(args(), env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resumed run: \d+ were already done/);
    const resumedRequests = sandbox.control.stats().total;
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);

    // A finished run is not resumed: the same command fetches the range again, and writes nothing new.
    const writesBefore = await validicTupleWrites(db);
    sandbox.control.resetStats();
    const again = await runCli(args(), env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toMatch(/resumed/);
    expect(again.stdout).toMatch(/inserted 0, updated 0/);
    const freshRequests = sandbox.control.stats().total;
    expect(freshRequests).toBeGreaterThan(resumedRequests);
    await waitForStep(
      'the tuple writes to settle at their count before the refetch',
      async () => expect(await validicTupleWrites(db)).toBe(writesBefore),
      { timeout: 5000, interval: 50 },
    );
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);
  });
});
