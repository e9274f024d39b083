/**
 * PostgreSQL killed mid-load (`pg_ctl stop -m immediate`: no shutdown checkpoint, crash recovery on
 * restart) under a running `validic-sync backfill`, then started again after a seeded pause. Runs on a
 * PRIVATE cluster this file creates (private-postgres.ts); the machine's shared cluster is never stopped.
 * What was committed survives the crash, what was in flight rolls back; the run recovers or fails
 * visibly, running it again finishes, and the warehouse equals the truth.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.ts';
import { openWarehouse } from '../../src/warehouse/open-warehouse.ts';
import { LEDGER_PROGRESS_SQL } from '../helpers/backfill-progress.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { useBeforeAll } from '../helpers/use-before-all.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { recordFaultRun } from './fault-results.ts';
import { backfillArgs, countAgainstTruth, rerunToCompletion, seededRandom } from './oracle.ts';
import { startPrivatePostgres } from './private-postgres.ts';
import { startBackfill } from './scenario.ts';

const DAYS = 35;
const RUNS = 3;

/** Done and total backfill windows, or undefined while the database is down or not migrated yet. */
async function windows(url: string): Promise<{ done: number; total: number } | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    const r = await client.query<{ done: number; total: number }>(LEDGER_PROGRESS_SQL);
    return r.rows[0];
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => {});
  }
}

describe('fault postgres-kill', () => {
  const cluster = useBeforeAll(startPrivatePostgres, (c) => c.destroy());

  it(`lands exactly the truth after ${RUNS} seeded immediate kills of PostgreSQL mid-load`, async () => {
    let landedMidRun = 0;
    for (let run = 0; run < RUNS; run++) {
      const random = seededRandom(6_600 + run);
      const sandbox = await startSandbox({ seed: 700 + run, users: 3, days: DAYS, faults: { latencyMs: 3 } });
      const name = `faults_kill_${run}`;
      const admin = new pg.Client({ connectionString: cluster.url() });
      await admin.connect();
      await admin.query(`drop database if exists ${name}`);
      await admin.query(`create database ${name}`);
      await admin.end();
      const url = cluster.url(name);
      try {
        const env = sandboxEnv(sandbox, { DATABASE_URL: url, VALIDIC_SYNC_CONCURRENCY: '3' });
        const backfill = startBackfill(DAYS, env);
        const share = 0.1 + random() * 0.7;
        await waitForStep(
          `the ledger planned and ${Math.round(share * 100)} % of its windows done`,
          async () => {
            if (backfill.finished()) return;
            const w = await windows(url);
            expect(w?.total).toBeGreaterThan(0);
            expect(w!.done).toBeGreaterThanOrEqual(Math.floor(share * w!.total));
          },
          { timeout: 60_000, interval: 20 },
        );
        if (!backfill.finished()) landedMidRun++;
        await cluster.killImmediate();
        await new Promise((resolve) => setTimeout(resolve, 200 + Math.floor(random() * 1500)));
        await cluster.start();
        const first = await backfill.result;
        expect(first.stderr).not.toMatch(/Unhandled 'error' event/);
        expect([0, 1], first.stderr).toContain(first.code);
        const again = await rerunToCompletion(backfillArgs(DAYS), env);
        expect(again.code, again.stderr).toBe(0);
        const warehouse = await openWarehouse({ databaseUrl: url, maxConnections: 2 });
        try {
          const counts = await countAgainstTruth(warehouse, sandbox);
          recordFaultRun('postgres-kill', counts);
          expect(counts.differences, `run ${run}, killed at ${share.toFixed(2)}`).toEqual(NO_DIFFERENCES);
        } finally {
          await warehouse.close();
        }
      } finally {
        await sandbox.close();
      }
    }
    expect(landedMidRun).toBeGreaterThanOrEqual(RUNS - 1);
  });
});
