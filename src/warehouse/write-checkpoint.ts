/** The checkpoint a batch reaches: cursors replaced and ledger windows marked done, in the batch's transaction. */
import { sql } from 'kysely';
import type { Checkpoint } from './batch.ts';
import type { WarehouseTransaction } from './open-warehouse.ts';

export async function writeCheckpoint(tx: WarehouseTransaction, orgId: string, checkpoint: Checkpoint) {
  const cursors = new Map<string, unknown>();
  for (const c of checkpoint.cursors ?? []) cursors.set(c.key, c.value);
  if (cursors.size > 0) {
    await tx.db
      .insertInto('validic_sync.checkpoints')
      .values(
        [...cursors].map(([key, value]) => ({ org_id: orgId, key, value: JSON.stringify(value ?? null) })),
      )
      .onConflict((oc) =>
        oc
          .columns(['org_id', 'key'])
          .doUpdateSet({ value: (eb) => eb.ref('excluded.value'), updated_at: sql`now()` }),
      )
      .execute();
  }
  for (const w of checkpoint.windows ?? []) {
    await tx.db
      .updateTable('validic_sync.backfill_windows')
      .set({ status: 'done', records: w.records, requests: w.requests, completed_at: sql`now()` })
      .where('run_id', '=', w.runId)
      .where('window_key', '=', w.windowKey)
      .execute();
  }
}
