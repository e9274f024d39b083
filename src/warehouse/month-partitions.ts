/**
 * The monthly partitions of `validic.records` and `validic.record_versions` (migration 0010). A row
 * whose month has no partition cannot be inserted, so the loader makes sure every month of a batch
 * exists BEFORE its transaction: `validic_sync.create_month_partitions` takes a brief exclusive lock
 * on both tables, which inside a long load transaction would block every reader until it commits.
 * The months already created are remembered per warehouse, so this costs one catalog query per
 * process and a round trip only when a batch reaches a new month. The worker's daily
 * `warehouse.maintain` job and `migrate` create the coming months ahead of time.
 */
import { sql } from 'kysely';
import type { Warehouse } from './open-warehouse.ts';

const known = new WeakMap<Warehouse, Set<string>>();

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
  if (!e || e.code !== '23514') return false;
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
