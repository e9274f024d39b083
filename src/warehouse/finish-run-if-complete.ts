/**
 * Marks a backfill run done once its ledger has no pending window. Called after every window commit,
 * so a run finishes the same way whether its windows ran inline or on a fleet of BullMQ workers.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

export async function finishRunIfComplete(db: Kysely<Database>, runId: string): Promise<boolean> {
  const result = await db
    .updateTable('validic_sync.runs')
    .set({ status: 'done', finished_at: sql`now()` })
    .where('id', '=', runId)
    .where('status', '=', 'running')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('validic_sync.backfill_windows')
            .select(sql`1`.as('one'))
            .where('run_id', '=', runId)
            .where('status', '=', 'pending'),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
