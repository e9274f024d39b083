/**
 * How far a backfill has come, read from the warehouse: its ledger's windows done and in all, and the
 * wait for its run to end with nothing left in the job queue. Used by the end-to-end and fault tests
 * that stop, kill or cut a backfill part-way.
 */
import { type Kysely, sql } from 'kysely';
import { expect } from 'vitest';
import type { JobQueue } from '../../src/queue/job-queue.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { waitForStep } from './wait-for-step.ts';

/** Done and total windows of the backfill ledger (every run's, the test databases hold one backfill). */
export const LEDGER_PROGRESS_SQL = `select count(*) filter (where status = 'done')::int as done, count(*)::int as total
  from validic_sync.backfill_windows`;

export async function ledgerProgress(db: Kysely<Database>): Promise<{ done: number; total: number }> {
  const { rows } = await sql.raw<{ done: number; total: number }>(LEDGER_PROGRESS_SQL).execute(db);
  return rows[0]!;
}

/** Waits for `step`: the one backfill run done and `queue` holding nothing active, waiting or delayed. */
export async function waitForRunDoneAndQueueIdle(
  step: string,
  db: Kysely<Database>,
  queue: Pick<JobQueue, 'counts'>,
  options: { timeout: number; interval: number },
): Promise<void> {
  await waitForStep(
    step,
    async () => {
      const runs = await sql<{ status: string }>`select status from validic_sync.runs`.execute(db);
      expect(runs.rows.map((r) => r.status)).toEqual(['done']);
      const c = await queue.counts();
      expect(c.active + c.waiting + c.prioritized + c.delayed).toBe(0);
    },
    options,
  );
}
