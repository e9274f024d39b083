/**
 * The monthly partitions of `validic.records` and `validic.record_versions` (migrations 0010, 0032):
 * making sure a month exists before a row needs it, without ever making a load or a query wait.
 *
 * A row whose month has no partition cannot be inserted, so the loader makes sure every month of a batch
 * exists BEFORE its transaction (`ensureMonthPartitions`); a backfill creates the months of its range
 * when it plans them, and `warehouse.maintain` and `migrate` create the coming months ahead. The months
 * already created are remembered per warehouse, so a load into an existing month costs no query at all
 * (one catalog query per process) and takes no lock for it.
 *
 * `validic_sync.create_month_partitions` creates a month's tables apart and ATTACHes them. ATTACH locks
 * the parent SHARE UPDATE EXCLUSIVE (loads and queries go on) but the default partition
 * (`records_undated`, `record_versions_undated`) ACCESS EXCLUSIVE, and every load and every query of
 * `validic.records` without a `start_time` bound uses the default partition. A creation that waited for
 * that lock would stand in PostgreSQL's lock queue behind whoever reads the table, and every later load
 * and read would queue behind the creation: one analyst's long read would stall every organization's
 * loads. So the function (migration 0032) takes that lock with NOWAIT: free now, or 55P03 at once, and
 * this module tries again after a short jittered wait, for up to `patienceMs`. Nothing ever queues behind
 * an attempt, so a failed one costs a round trip and nobody waits on it. Holding every lock ATTACH needs
 * before it starts, the creation never waits for a load, so it cannot deadlock with one, and loads need
 * no lock against it.
 *
 * What this cannot do: create a month while a transaction keeps the default partition in use (an open
 * read of `validic.records` with no `start_time` bound). Then the attempts run out, the caller gets a
 * `UserFacingError` whose cause is the 55P03 (a `conflict` for `classifyFailure`: run again later,
 * no attempt spent), and only the loads that need that new month wait for the read to end; every load
 * into an existing month goes on.
 */

import { sql } from 'kysely';
import { errorCodeOf, UserFacingError } from '../../errors/index.ts';
import { type BackoffOptions, backoffDelay } from '../../time/backoff-delay.ts';
import { type Clock, systemClock } from '../../time/clock.ts';
import type { Warehouse } from '../open-warehouse.ts';

/** SQLSTATE of a lock not granted in time (NOWAIT, or past `lock_timeout`). */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * How long one call keeps trying, ms. Long enough to find a moment between the transactions of busy
 * loads (each attempt is one round trip that nobody waits on), short enough that a caller blocked by a
 * long read hands the wait to its own retry (a job waits without spending an attempt).
 */
export const MONTH_CREATION_PATIENCE_MS = 30_000;

/** Waits between attempts: 5 ms plus a random share of 20 ms, doubling up to 1 s. */
export const MONTH_CREATION_BACKOFF: BackoffOptions = { baseMs: 20, capMs: 1_000, minMs: 5 };

export interface MonthCreationOptions {
  /** Keep trying for this long, ms (default MONTH_CREATION_PATIENCE_MS; 0: one attempt). */
  patienceMs?: number;
  backoff?: BackoffOptions;
  clock?: Clock;
  /** Uniform in [0, 1) (tests inject one). */
  random?: () => number;
  signal?: AbortSignal;
  /** Told after each attempt that found the default partitions in use. */
  onBusy?: (attempt: number) => void;
}

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

/**
 * Creates the partitions of every month from `first` to `last` (`YYYY-MM`) that is missing; returns how
 * many tables it created. Tries again while the default partitions are in use, for up to `patienceMs`.
 */
export async function createMonthPartitions(
  warehouse: Warehouse,
  first: string,
  last: string,
  options: MonthCreationOptions = {},
): Promise<number> {
  const clock = options.clock ?? systemClock;
  const patienceMs = options.patienceMs ?? MONTH_CREATION_PATIENCE_MS;
  const started = clock.now();
  for (let attempt = 1; ; attempt += 1) {
    try {
      const { rows } = await sql<{ created: number }>`
        select validic_sync.create_month_partitions(${`${first}-01`}::date, ${`${last}-01`}::date) as created`.execute(
        warehouse.db,
      );
      known.delete(warehouse);
      return rows[0]?.created ?? 0;
    } catch (error) {
      if (errorCodeOf(error) !== LOCK_NOT_AVAILABLE) throw error;
      options.onBusy?.(attempt);
      const delayMs = backoffDelay(attempt, options.backoff ?? MONTH_CREATION_BACKOFF, options.random);
      if (clock.now() + delayMs - started > patienceMs) throw monthsBusy(first, last, attempt, error);
      await clock.sleep(delayMs, options.signal);
    }
  }
}

function monthsBusy(first: string, last: string, attempts: number, cause: unknown): UserFacingError {
  const months = first === last ? first : `${first} to ${last}`;
  return new UserFacingError(
    `could not create the partitions of ${months}: the default partitions (validic_partitions.records_undated, record_versions_undated) were in use at each of ${attempts} attempts, most likely by a long-running read of validic.records without a start_time bound`,
    {
      fix: 'nothing to do: the loads that need these months are retried, and every other load goes on; to create them sooner, end the long transaction (pg_stat_activity shows it) or bound its query by start_time',
      cause,
    },
  );
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
  options: MonthCreationOptions = {},
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
  for (const month of missing) await createMonthPartitions(warehouse, month, month, options);
  known.set(warehouse, await existingMonths(warehouse));
}
