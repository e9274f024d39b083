/**
 * Upkeep of the monthly partitions (migration 0010), run by the worker's daily `warehouse.maintain`
 * job and, for the partitions ahead, by `migrate`:
 * - the partitions of the current month and the next `monthsAhead` exist before any row needs them;
 * - with a raw retention of N months, `raw` of records in months that ended before the first day of
 *   the month N months back is emptied (set to null, `raw_emptied_at` stamped). The normalized
 *   columns, every view and record_versions keep their rows. A month is walked in block ranges, one
 *   short transaction each, so no statement rewrites a whole month; a rerun skips what is done.
 */
import { sql } from 'kysely';
import { createMonthPartitions } from './month-partitions.ts';
import type { Warehouse } from './open-warehouse.ts';

/** `YYYY-MM` of the month `offset` months after the month of `now` (UTC). */
export function monthAfter(now: Date, offset: number): string {
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
  return d.toISOString().slice(0, 7);
}

/** Creates the partitions of this month and the next `monthsAhead`; returns how many were missing. */
export async function createPartitionsAhead(
  warehouse: Warehouse,
  now: Date,
  monthsAhead: number,
): Promise<number> {
  return await createMonthPartitions(warehouse, monthAfter(now, 0), monthAfter(now, monthsAhead));
}

/** Heap blocks emptied per transaction: about 1,000 records of ~8 KB pages. */
const BLOCKS_PER_STEP = 128;

export interface EmptyRawResult {
  /** First day (UTC) of the oldest month whose raw is kept. */
  keptFrom: string;
  months: string[];
  emptied: number;
}

/** Empties raw of every month that ended before the month `retentionMonths` back from `now`. */
export async function emptyRawBefore(
  warehouse: Warehouse,
  now: Date,
  retentionMonths: number,
  signal?: AbortSignal,
): Promise<EmptyRawResult> {
  const keptFrom = `${monthAfter(now, -retentionMonths)}-01`;
  const { rows } = await sql<{ part: string; month: string; blocks: string }>`
    select c.oid::regclass::text as part, substring(c.relname from 'records_(\\d{4}_\\d{2})$') as month,
           (pg_relation_size(c.oid) / current_setting('block_size')::bigint)::text as blocks
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'validic.records'::regclass and c.relname ~ '^records_\\d{4}_\\d{2}$'
    order by c.relname`.execute(warehouse.db);
  const result: EmptyRawResult = { keptFrom, months: [], emptied: 0 };
  for (const row of rows) {
    const month = row.month.replace('_', '-');
    if (`${month}-01` >= keptFrom) continue;
    result.months.push(month);
    for (let block = 0; block < Number(row.blocks); block += BLOCKS_PER_STEP) {
      signal?.throwIfAborted();
      const step = await sql<{ emptied: string }>`
        select validic_sync.empty_raw(${row.part}::regclass, ${block}, ${BLOCKS_PER_STEP})::text as emptied`.execute(
        warehouse.db,
      );
      result.emptied += Number(step.rows[0]?.emptied ?? 0);
    }
  }
  return result;
}
