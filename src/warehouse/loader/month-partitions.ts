/**
 * The monthly partitions of `validic.records` and `validic.record_versions` (migration 0010). A row
 * whose month has no partition cannot be inserted, so the loader makes sure every month of a batch
 * exists BEFORE its transaction: `validic_sync.create_month_partitions` creates the month's tables
 * apart and ATTACHes them (SHARE UPDATE EXCLUSIVE on the parents: loads and queries go on), and the
 * load transaction itself then never holds those locks.
 * The months already created are remembered per warehouse, so this costs one catalog query per
 * process and a round trip only when a batch reaches a new month. The worker's daily
 * `warehouse.maintain` job and `migrate` create the coming months ahead of time.
 * A creation and the loads of OTHER batches exclude each other through MONTH_PARTITIONS_LOCK (below).
 */
import { sql } from 'kysely';
import type { Warehouse } from '../open-warehouse.ts';

const known = new WeakMap<Warehouse, Set<string>>();

/**
 * The advisory lock `validic_sync.create_month_partitions` takes exclusively, first thing, for its
 * whole transaction (migration 0010: `pg_advisory_xact_lock(7436112010)`). Every load that writes
 * records takes it SHARED, first thing in its transaction (load-transaction.ts, `monthPartitions`).
 *
 * Why: ATTACH locks the default partitions ACCESS EXCLUSIVE, `records_undated` then
 * `record_versions_undated`, while a load's statements lock every partition of the two tables in the
 * order the planner takes them: the records' probe plans its record_versions sub-select first. A load
 * in flight holding `record_versions_undated` and waiting for `records_undated`, and a creation holding
 * `records_undated` and waiting for `record_versions_undated`, is a deadlock (40P01), found by
 * `node bench/query-scaling.ts --quick` whenever a batch reached a new month while others were loading.
 * Creating the months a load needs before its own transaction (ensureMonthPartitions) does not prevent
 * it: the creation of one load meets the transactions of the others. Nor does a fixed order in the
 * creation, since no single order matches every statement of a load (or a reader). With this lock a
 * creation waits for the loads in flight to end, and loads that start meanwhile wait for the creation at
 * BEGIN, before they touch any table: the two never hold table locks at once. It costs nothing new: the
 * creation's ACCESS EXCLUSIVE waited for the loads in flight before (and loads behind it waited too), and
 * the function takes the lock already, so no migration is needed. Readers and other writers that touch
 * both tables do not take it; a deadlock with one of those still ends in 40P01 for one side, and the
 * loader's retry (retry-on-conflict.ts) runs the creation and the load again.
 */
export const MONTH_PARTITIONS_LOCK = 7_436_112_010;

/** `2026-03` of a canonical ISO timestamp (UTC). */
export const monthOf = (isoTime: string) => isoTime.slice(0, 7);

/** Months (`YYYY-MM`) that have a partition of validic.records. */
async function existingMonths(warehouse: Warehouse): Promise<Set<string>> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'validic.records'::regclass`.execute(warehouse.db);
  const months = new Set<string>();
  for (const { name } of rows) {
    const m = /^records_(\d{4})_(\d{2})$/.exec(name);
    if (m) months.add(`${m[1]}-${m[2]}`);
  }
  return months;
}

/** Creates the partitions of every month from `first` to `last` (`YYYY-MM`) that is missing. */
export async function createMonthPartitions(
  warehouse: Warehouse,
  first: string,
  last: string,
): Promise<number> {
  const { rows } = await sql<{ created: number }>`
    select validic_sync.create_month_partitions(${`${first}-01`}::date, ${`${last}-01`}::date) as created`.execute(
    warehouse.db,
  );
  known.delete(warehouse);
  return rows[0]?.created ?? 0;
}

/**
 * True for the error of a row whose month has no partition: it reached the undated partition, whose
 * CHECK refuses it. That happens when an operator detached or dropped a month this process had seen.
 */
export function isMissingMonthPartition(error: unknown): boolean {
  const e = error as { code?: string; constraint?: string; message?: string } | null;
  if (e?.code !== '23514') return false;
  return (
    e.constraint === 'records_undated_only' ||
    e.constraint === 'record_versions_undated_only' ||
    /no partition of relation/.test(e.message ?? '')
  );
}

/** Forgets the months this process knows, so the next ensureMonthPartitions asks the catalog again. */
export function forgetMonthPartitions(warehouse: Warehouse): void {
  known.delete(warehouse);
}

/** Makes sure the month of every given start time has its partitions (null: the default partition). */
export async function ensureMonthPartitions(
  warehouse: Warehouse,
  startTimes: Iterable<string | null>,
): Promise<void> {
  const months = new Set<string>();
  for (const time of startTimes) if (time) months.add(monthOf(time));
  if (months.size === 0) return;
  let have = known.get(warehouse);
  if (!have) {
    have = await existingMonths(warehouse);
    known.set(warehouse, have);
  }
  const missing = [...months].filter((m) => !have.has(m)).sort();
  if (missing.length === 0) return;
  // One call per month: a batch with a stray year-1900 record must not create every month between.
  for (const month of missing) await createMonthPartitions(warehouse, month, month);
  const after = await existingMonths(warehouse);
  known.set(warehouse, after);
}
