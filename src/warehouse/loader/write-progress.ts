/**
 * The progress a batch reaches, in the batch's transaction and in ONE statement (a poll window is a
 * small batch, so each round trip counts): cursors replaced and ledger windows marked done.
 * Rows are written in key order, so concurrent loads touching the same cursors cannot deadlock.
 */
import { type RawBuilder, sql } from 'kysely';
import type { BatchProgress } from '../../pipeline/batch.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';

export async function writeProgress(tx: WarehouseTransaction, orgId: string, progress: BatchProgress) {
  const ctes = progressCtes(orgId, progress);
  if (ctes.length > 0) await sql`with ${sql.join(ctes)} select 1`.execute(tx.db);
}

/**
 * The progress as data-modifying CTEs (`name as (…)`), so the loader can append them to a
 * statement it sends anyway (the new-records insert) and save the round trip.
 */
export function progressCtes(orgId: string, progress: BatchProgress): RawBuilder<unknown>[] {
  const cursors = new Map<string, unknown>();
  for (const c of progress.cursors ?? []) cursors.set(c.key, c.value);
  const keys = [...cursors.keys()].sort();
  // The same window twice: the last mark wins (as with one update after the other).
  const windows = new Map<string, { runId: string; windowKey: string; records: number; requests: number }>();
  for (const w of progress.windows ?? []) windows.set(`${w.runId}\u0001${w.windowKey}`, w);
  const parts: RawBuilder<unknown>[] = [];
  if (cursors.size > 0) {
    parts.push(sql`progress_cursors as (
      insert into validic_sync.checkpoints (org_id, key, value)
      select ${orgId}, x.key, x.value::jsonb
      from unnest(${keys}::text[], ${keys.map((k) => JSON.stringify(cursors.get(k) ?? null))}::text[])
        as x(key, value)
      on conflict (org_id, key) do update set value = excluded.value, updated_at = now())`);
  }
  if (windows.size > 0) {
    const list = [...windows.keys()].sort().map((k) => windows.get(k)!);
    parts.push(sql`progress_windows as (
      update validic_sync.backfill_windows b
      set status = 'done', records = x.records, requests = x.requests, completed_at = now()
      from unnest(${list.map((w) => w.runId)}::text[], ${list.map((w) => w.windowKey)}::text[],
                  ${list.map((w) => w.records)}::int4[], ${list.map((w) => w.requests)}::int4[])
        as x(run_id, window_key, records, requests)
      where b.run_id = x.run_id and b.window_key = x.window_key)`);
  }
  return parts;
}
