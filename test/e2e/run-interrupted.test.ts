/**
 * A run whose process died is shown as interrupted, not running for ever (src/warehouse/run-heartbeats.ts):
 * a backfill SIGKILLed mid-run keeps its row but its heartbeat stops, and `status` calls it interrupted
 * once the heartbeat is over a minute old; a backfill stopped by Ctrl-C, or refused by the platform,
 * marks its run interrupted as it exits; an audit command stopped by Ctrl-C ends its run as interrupted.
 * Running the same backfill again resumes the run and finishes it.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { collectSyncStatus } from '../../src/metrics/sync-status.ts';
import { RUN_STALE_MS } from '../../src/warehouse/run-heartbeats.ts';
import { ledgerProgress } from '../helpers/backfill-progress.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { useSandbox } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

const DAY_MS = 86_400_000;
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);

interface RunRow {
  id: string;
  status: string;
  holder: string | null;
  heartbeat_at: Date | null;
}

describe('runs whose process died', () => {
  // Enough windows and latency that a stop lands mid-run.
  const sandbox = useSandbox({ seed: 23, users: 6, days: 75, faults: { latencyMs: 40 } });
  const db = useTestDatabase();
  const args = ['backfill', '--from', day(80), '--to', day(0)];
  const env = () => sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONCURRENCY: '2' });

  const runs = async () =>
    (
      await sql<RunRow>`select id, status, holder, heartbeat_at from validic_sync.runs order by started_at`.execute(
        db.warehouse.db,
      )
    ).rows;
  const shownStatus = async (now: Date) =>
    (await collectSyncStatus({ warehouse: db.warehouse, orgIds: [sandbox.orgId], now })).orgs[0]!.runs.map(
      (r) => r.status,
    );
  const midRun = (what: string) =>
    waitForStep(
      what,
      async () => {
        const { done, total } = await ledgerProgress(db.warehouse.db);
        expect(done).toBeGreaterThanOrEqual(10);
        expect(done).toBeLessThan(total);
      },
      { timeout: 60_000, interval: 20 },
    );

  it('SIGKILL: the row stays, its heartbeat stops, status shows it interrupted once the heartbeat is stale', async () => {
    const killed = spawnCli(args, env());
    await midRun('ten backfill windows done, the run unfinished');
    killed.kill('SIGKILL');
    expect((await killed.result).signal).toBe('SIGKILL');

    const [run] = await runs();
    expect(run).toMatchObject({ status: 'running', holder: expect.stringMatching(/^command .+ pid \d+$/) });
    expect(run!.holder).toContain(`pid ${killed.pid}`);
    const beat = run!.heartbeat_at!.getTime();
    // Within a heartbeat's span the run may still be alive; past it, its process is gone.
    expect(await shownStatus(new Date(beat + 1000))).toEqual(['running']);
    expect(await shownStatus(new Date(beat + RUN_STALE_MS + 1000))).toEqual(['interrupted']);

    // The same command resumes it, holds it from its own process, and finishes it.
    const resumed = await runCli(args, env());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resumed run/);
    expect(await runs()).toMatchObject([{ id: run!.id, status: 'done' }]);
    expect((await runs())[0]!.holder).not.toBe(run!.holder);
  });

  it('Ctrl-C: the command marks its run interrupted as it exits, and status shows it at once', async () => {
    await sql`delete from validic_sync.backfill_windows`.execute(db.warehouse.db);
    await sql`delete from validic_sync.runs`.execute(db.warehouse.db);
    const stopped = spawnCli([...args, '--restart'], env());
    await midRun('ten windows of the new run done');
    stopped.kill('SIGINT');
    const result = await stopped.result;
    expect(result.code, result.stderr).not.toBe(0);
    expect(await runs()).toMatchObject([{ status: 'interrupted' }]);
    expect(await shownStatus(new Date())).toEqual(['interrupted']);
  });

  it('a refused token: the command fails, and its run is interrupted, not running', async () => {
    await sql`delete from validic_sync.backfill_windows`.execute(db.warehouse.db);
    await sql`delete from validic_sync.runs`.execute(db.warehouse.db);
    const refused = await runCli([...args, '--restart'], { ...env(), VALIDIC_TOKEN: 'not-the-token' });
    // A refused token is a setting to fix (exit 2), named in one message.
    expect(refused.code, refused.stdout + refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/VALIDIC_TOKEN: the platform refused the token/);
    expect(await runs()).toMatchObject([{ status: 'interrupted' }]);
    expect(await shownStatus(new Date())).toEqual(['interrupted']);
  });

  it('an audit stopped by Ctrl-C ends its run as interrupted', async () => {
    const audit = spawnCli(['audit', '--from', day(80), '--to', day(0), '--sample', '100%'], env());
    await waitForStep(
      'some cells of the audit run recorded',
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from validic_sync.audit_cells`.execute(db.warehouse.db);
        expect(rows[0]!.n).toBeGreaterThanOrEqual(3);
      },
      { timeout: 60_000, interval: 20 },
    );
    audit.kill('SIGINT');
    await audit.result;
    const { rows } = await sql<{
      interrupted: boolean;
      ended_at: Date | null;
      planned: number;
      cells: number;
    }>`
      select interrupted, ended_at, planned, cells_complete + cells_drift + cells_failed + cells_unsynced as cells
      from validic_sync.audits`.execute(db.warehouse.db);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.cells).toBeLessThan(rows[0]!.planned);
    expect(rows[0]).toMatchObject({ interrupted: true, ended_at: expect.any(Date) });
    const status = await collectSyncStatus({ warehouse: db.warehouse, orgIds: [sandbox.orgId] });
    expect(status.orgs[0]!.audit.lastRun?.state).toBe('interrupted');
  });
});
