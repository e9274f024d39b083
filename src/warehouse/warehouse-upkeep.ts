/**
 * Upkeep of the monthly partitions (migration 0010), run by the worker's daily `warehouse.maintain`
 * job and, for the partitions ahead, by `migrate`:
 * - the partitions of the current month and the next `monthsAhead` exist before any row needs them,
 *   and a backfill's months exist before its first load (`createMonthsBetween`, when it is planned);
 *   a creation never makes a load or a query wait (loader/month-partitions.ts);
 * - with a raw retention of N months, `raw` of records in months that ended before the first day of
 *   the month N months back is emptied (set to null, `raw_emptied_at` stamped). The normalized
 *   columns, every view and record_versions keep their rows. A month is walked in block ranges, one
 *   short transaction each, so no statement rewrites a whole month; a rerun skips what is done.
 */
import { sql } from 'kysely';
import { createMonthPartitions, type MonthCreationOptions } from './loader/month-partitions.ts';
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
  options?: MonthCreationOptions,
): Promise<number> {
  return await createMonthPartitions(warehouse, monthAfter(now, 0), monthAfter(now, monthsAhead), options);
}

/**
 * Creates the partitions of every month from the one of `fromDate` to the one of `toDate` (`YYYY-MM-DD`,
 * UTC): a backfill's months, when it plans them, so that its loads find them.
 */
export async function createMonthsBetween(
  warehouse: Warehouse,
  fromDate: string,
  toDate: string,
  options?: MonthCreationOptions,
): Promise<number> {
  return await createMonthPartitions(warehouse, fromDate.slice(0, 7), toDate.slice(0, 7), options);
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

/** Rows changed in a never-analyzed table before it gets its first statistics (autovacuum's own 50 + 10 %, floored). */
const FIRST_ANALYZE_ROWS = 1_000;

/**
 * ANALYZE of the warehouse's tables that have rows but no statistics yet: a fresh warehouse right
 * after its first large load, before autovacuum's first autoanalyze (or on a server where autovacuum
 * is off). Without statistics the planner guesses row counts, and the budget plan's counts became a
 * nested loop over every record per user: 67 s per records.recent tick at 10,000 users
 * (bench/population.ts, docs/scaling.md section 0). Only a table never analyzed, by anyone, is
 * touched; from its first statistics on, autovacuum (or the operator) keeps them. The check reads
 * pg_stat_user_tables alone, so a tick that finds nothing to do costs one small query.
 */
export async function analyzeNewTables(warehouse: Warehouse): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select format('%I.%I', schemaname, relname) as name from pg_stat_user_tables
    where schemaname in ('validic', 'validic_sync', 'validic_partitions')
      and last_analyze is null and last_autoanalyze is null
      and n_mod_since_analyze >= ${FIRST_ANALYZE_ROWS}
    order by n_mod_since_analyze desc`.execute(warehouse.db);
  for (const { name } of rows) await sql`analyze ${sql.raw(name)}`.execute(warehouse.db);
  return rows.map((r) => r.name);
}
