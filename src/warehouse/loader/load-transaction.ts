/**
 * One load's transaction: its months created first under the advisory lock loads share, and the
 * whole transaction run again after a deadlock or a serialization failure.
 */

import { sql } from 'kysely';
import { CONFLICT_CODES, errorCodeIn } from '../../errors/index.ts';
import { type BackoffOptions, backoffDelay } from '../../time/backoff-delay.ts';
import { type Clock, systemClock } from '../../time/clock.ts';
import type { Warehouse, WarehouseTransaction } from '../open-warehouse.ts';

/**
 * The loader's transaction: BEGIN, its advisory locks and the records' keys-only probe in ONE round
 * trip (a small batch is bound by round trips, not by bytes), on the general `Warehouse.transaction`
 * with its `begin` statements. The other saving, the progress riding in the new-records statement
 * (`also`), is in apply-batch.ts and insert-new-records.ts.
 */

/**
 * Transaction-level advisory locks on `hashtextextended(key, 0)`: the shared ones first, then the
 * exclusive ones in hash order, so two transactions taking overlapping sets always take them in the
 * same order and cannot deadlock on them. Before all of them, when `monthPartitions` is set, the month
 * creation's lock, shared (load-transaction.ts, MONTH_PARTITIONS_LOCK): first, so a load waiting for a
 * creation holds no key lock another load could be waiting for.
 */
export interface LoadLocks {
  shared?: readonly string[];
  exclusive?: readonly string[];
  /** The transaction writes validic.records / record_versions: share the month creation's lock. */
  monthPartitions?: boolean;
}

/**
 * A SQL string literal for the statements sent with BEGIN, correct whatever
 * standard_conforming_strings says (the same rule as pg's escapeLiteral: quotes doubled; with a
 * backslash, an E'' literal with it doubled).
 */
export function sqlLiteral(text: string): string {
  const quoted = text.replaceAll("'", "''");
  return text.includes('\\') ? `E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}

/** The statements that take `locks` (simple query protocol: literals, no parameters). */
function advisoryLockSql(locks: LoadLocks): string[] {
  const lockAll = (lockFunction: string, keys: readonly string[] = []) =>
    keys.length === 0
      ? []
      : [
          `select ${lockFunction}(k) from (select distinct hashtextextended(x, 0) as k from unnest(array[${[...new Set(keys)].map(sqlLiteral).join(',')}]::text[]) as x order by 1) as s`,
        ];
  return [
    ...(locks.monthPartitions ? [`select pg_advisory_xact_lock_shared(${MONTH_PARTITIONS_LOCK})`] : []),
    ...lockAll('pg_advisory_xact_lock_shared', locks.shared),
    ...lockAll('pg_advisory_xact_lock', locks.exclusive),
  ];
}

/**
 * Runs `fn` in one transaction that first takes `locks`, then runs `probe` (one statement with
 * literals only; it sees everything committed before the locks were granted), all in BEGIN's round
 * trip. `fn` gets the probe's rows (undefined without a probe).
 */
export async function loadTransaction<T>(
  warehouse: Warehouse,
  { locks, probe }: { locks: LoadLocks; probe?: string | null },
  fn: (tx: WarehouseTransaction, probed: Record<string, unknown>[] | undefined) => Promise<T>,
): Promise<T> {
  const statements = [...advisoryLockSql(locks), ...(probe ? [probe] : [])];
  return await warehouse.transaction(
    (tx) => fn(tx, probe ? (tx.beginRows ?? []) : undefined),
    statements.length > 0 ? { begin: statements.join('; ') } : {},
  );
}

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
/*
 * A row whose month has no partition cannot be inserted, so `ensureMonthPartitions` creates the months a
 * batch reaches before its transaction (one `validic_sync.create_month_partitions` call per missing month,
 * each its own transaction), remembering per warehouse which months exist.
 *
 * Creating a month ATTACHes a table to each parent, which locks the parent SHARE UPDATE EXCLUSIVE (loads
 * and queries go on) but the parent's default partition (`records_undated`, `record_versions_undated`)
 * ACCESS EXCLUSIVE, in that order. A load's statements lock every partition of both tables in the
 * planner's order (the probe plans its `record_versions` sub-select first). So a creation holding
 * `records_undated` and waiting for `record_versions_undated`, and a load of another batch holding the
 * latter and waiting for the former, deadlocked (`node bench/query-scaling.ts --quick` died of it twice
 * in two runs; so does `test/integration/warehouse-loader-concurrent-months.test.ts` without the fix, every seed).
 *
 * The fix, `MONTH_PARTITIONS_LOCK`: the creation function takes an exclusive advisory lock first thing
 * (it always did, to serialize creations), and every load that writes records now takes the same lock
 * SHARED first thing in its transaction, before any key lock and any table. A creation then waits for the
 * loads in flight, and loads that start meanwhile wait for it at BEGIN: a creation and a load never hold
 * table locks at the same time. Chosen over the alternatives because:
 *
 * - creating the months before the load's own transaction was already done and does not help: the
 *   deadlock is between one batch's creation and the transactions of OTHER batches;
 * - no fixed lock order inside the creation matches every statement of every load and reader;
 * - it costs no new waiting (the creation's ACCESS EXCLUSIVE already waited for every load in flight, and
 *   queued the loads behind it), and the function takes the lock already, so no migration is needed.
 *
 * Readers and other writers that touch both tables in one transaction do not take the lock; should one of
 * them deadlock with a creation, PostgreSQL rolls one side back, and a load's creation is run again by
 * `retryOnConflict`.
 */
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
 * loader's retry (load-transaction.ts) runs the creation and the load again.
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

/**
 * The loader's retry of a whole transaction that PostgreSQL rolled back because it lost a race with
 * another one: `40P01` (the deadlock detector chose it) or `40001` (serialization failure), the
 * `CONFLICT_CODES` of src/errors/cause-chain.ts.
 *
 * `retryOnConflict(attempt)` runs a whole transaction again when PostgreSQL rolled it back with a code of
 * `CONFLICT_CODES` (40P01, 40001; anywhere in the cause chain): at most `CONFLICT_ATTEMPTS` (4) attempts
 * in all, with a short jittered wait between them (10 ms plus up to 50, 100, 200 ms: the race is over once
 * one side is rolled back, and the jitter keeps the same two loads from meeting again in step). The
 * loader's transaction is safe to run again from the start: it probes what is stored under its locks and
 * writes only the difference, its counts start from zero, its staging tables are emptied by the rollback.
 * A conflict that outlives the attempts goes to the caller, whose `classifyFailure` says `conflict`: a job
 * waits 1 s without spending an attempt, the stream holds its frames and commits them again.
 *
 * Each retry is logged (warn), counted in the batch's `LoadResult.transactionRetries` and told to the
 * warehouse's listeners (`onTransactionRetry`): the worker counts them in
 * `validic_sync_transaction_retries_total{code}`.
 */

/** Attempts in all, the first included: a conflict that outlives them goes to the caller. */
export const CONFLICT_ATTEMPTS = 4;

/**
 * Waits before the retries: 10 ms plus a random share of 50, 100, then 200 ms. Short, because the race
 * is over once PostgreSQL has rolled one side back; random, so the same two loads do not meet again in
 * step.
 */
export const CONFLICT_BACKOFF: BackoffOptions = { baseMs: 50, capMs: 250, minMs: 10 };

export interface ConflictRetry {
  /** The SQLSTATE that rolled the attempt back. */
  code: string;
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** Wait before the next attempt, ms. */
  delayMs: number;
  error: unknown;
}

export interface ConflictRetryOptions {
  /** Attempts in all (default CONFLICT_ATTEMPTS). */
  attempts?: number;
  backoff?: BackoffOptions;
  /** Uniform in [0, 1) (tests inject one). */
  random?: () => number;
  /** Default the system clock; tests inject a manual one. */
  clock?: Clock;
  /** Told before each retry. */
  onRetry?: (retry: ConflictRetry) => void;
}

/**
 * Runs `attempt` (one whole transaction, which must be safe to run again from the start) and runs it
 * again after a conflict, up to `attempts` times in all. Any other error, and a conflict on the last
 * attempt, is thrown as it is.
 */
export async function retryOnConflict<T>(
  attempt: (attempt: number) => Promise<T>,
  options: ConflictRetryOptions = {},
): Promise<T> {
  const attempts = Math.max(1, options.attempts ?? CONFLICT_ATTEMPTS);
  const clock = options.clock ?? systemClock;
  for (let n = 1; ; n += 1) {
    try {
      return await attempt(n);
    } catch (error) {
      const code = errorCodeIn(error, CONFLICT_CODES);
      if (code === undefined || n >= attempts) throw error;
      const delayMs = backoffDelay(n, options.backoff ?? CONFLICT_BACKOFF, options.random);
      options.onRetry?.({ code, attempt: n, delayMs, error });
      await clock.sleep(delayMs);
    }
  }
}

type RetryListener = (code: string) => void;

const listeners = new WeakMap<Warehouse, Set<RetryListener>>();

/**
 * Calls `listener` with the SQLSTATE of every transaction the loader runs again on `warehouse` (the
 * worker counts them in `validic_sync_transaction_retries_total`). Returns the unsubscribe.
 */
export function onTransactionRetry(warehouse: Warehouse, listener: RetryListener): () => void {
  let set = listeners.get(warehouse);
  if (!set) {
    set = new Set();
    listeners.set(warehouse, set);
  }
  set.add(listener);
  return () => {
    set.delete(listener);
  };
}

/** Tells the listeners of `warehouse` that a transaction is run again after `code`. */
export function reportTransactionRetry(warehouse: Warehouse, code: string): void {
  for (const listener of listeners.get(warehouse) ?? []) {
    try {
      listener(code);
    } catch {
      // A listener (metrics) must never fail a load.
    }
  }
}
