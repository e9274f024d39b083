/**
 * One load's transaction: BEGIN, its lock timeout, its advisory locks and the records' keys-only probe
 * in ONE round trip (a small batch is bound by round trips, not by bytes), on the general
 * `Warehouse.transaction` with its `begin` statements; and the whole transaction run again after a
 * deadlock, a serialization failure or a lock timeout. The other saving, the progress riding in the
 * new-records statement (`also`), is in apply-batch.ts and insert-new-records.ts.
 */

import { CONFLICT_CODES, errorCodeIn } from '../../errors/index.ts';
import { type BackoffOptions, backoffDelay } from '../../time/backoff-delay.ts';
import { type Clock, systemClock } from '../../time/clock.ts';
import type { Warehouse, WarehouseTransaction } from '../open-warehouse.ts';

/**
 * Transaction-level advisory locks on `hashtextextended(key, 0)`: the shared ones first, then the
 * exclusive ones in hash order, so two transactions taking overlapping sets always take them in the
 * same order and cannot deadlock on them. Only the loader's and the owner's roles may take advisory
 * locks (migration 0033 revokes the functions from PUBLIC), so no analyst can hold a key a load needs.
 */
export interface LoadLocks {
  shared?: readonly string[];
  exclusive?: readonly string[];
}

/**
 * The longest a load waits for any one lock (an advisory lock, a table, a row), ms. Past it PostgreSQL
 * cancels the statement with 55P03 (lock_not_available) and `retryOnConflict` runs the whole
 * transaction again; what outlives its attempts is a `conflict` for `classifyFailure` (a job waits
 * without spending an attempt, the stream holds its frames and commits them again). Without a timeout
 * a load would wait for as long as anything held what it needs (a session left inside a transaction, a
 * migration's ALTER queued behind a long read), and every load of its org would queue behind it: a big
 * batch's exclusive org lock waits for the waiting load's shared one, and every later load waits for
 * that. In normal running loads wait only for each other, one transaction at a time: a stream
 * micro-batch of 1,000 frames commits in 0.1–0.4 s here (bench/stream-throughput.ts), so 5 s leaves an
 * order of magnitude of slack on a loaded machine and still bounds any stall to seconds.
 */
export const LOAD_LOCK_TIMEOUT_MS = 5_000;

/**
 * A SQL string literal for the statements sent with BEGIN, correct whatever
 * standard_conforming_strings says (the same rule as pg's escapeLiteral: quotes doubled; with a
 * backslash, an E'' literal with it doubled).
 */
export function sqlLiteral(text: string): string {
  const quoted = text.replaceAll("'", "''");
  return text.includes('\\') ? `E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}

/** The statements that set the lock timeout and take `locks` (simple query protocol: literals only). */
function lockSql(locks: LoadLocks): string[] {
  const lockAll = (lockFunction: string, keys: readonly string[] = []) =>
    keys.length === 0
      ? []
      : [
          `select ${lockFunction}(k) from (select distinct hashtextextended(x, 0) as k from unnest(array[${[...new Set(keys)].map(sqlLiteral).join(',')}]::text[]) as x order by 1) as s`,
        ];
  return [
    `set local lock_timeout = ${LOAD_LOCK_TIMEOUT_MS}`,
    ...lockAll('pg_advisory_xact_lock_shared', locks.shared),
    ...lockAll('pg_advisory_xact_lock', locks.exclusive),
  ];
}

/**
 * Runs `fn` in one transaction that first sets the lock timeout and takes `locks`, then runs `probe`
 * (one statement with literals only; it sees everything committed before the locks were granted), all
 * in BEGIN's round trip. `fn` gets the probe's rows (undefined without a probe).
 */
export async function loadTransaction<T>(
  warehouse: Warehouse,
  { locks, probe }: { locks: LoadLocks; probe?: string | null },
  fn: (tx: WarehouseTransaction, probed: Record<string, unknown>[] | undefined) => Promise<T>,
): Promise<T> {
  const statements = [...lockSql(locks), ...(probe ? [probe] : [])];
  return await warehouse.transaction((tx) => fn(tx, probe ? (tx.beginRows ?? []) : undefined), {
    begin: statements.join('; '),
  });
}

/**
 * The loader's retry of a whole transaction that PostgreSQL rolled back because another one was in
 * its way: `40P01` (the deadlock detector chose it), `40001` (serialization failure) or `55P03` (a lock
 * not granted within LOAD_LOCK_TIMEOUT_MS), the `CONFLICT_CODES` of src/errors/cause-chain.ts.
 *
 * `retryOnConflict(attempt)` runs a whole transaction again when PostgreSQL rolled it back with a code of
 * `CONFLICT_CODES` (anywhere in the cause chain): at most `CONFLICT_ATTEMPTS` (4) attempts in all, with a
 * short jittered wait between them (10 ms plus up to 50, 100, 200 ms: a race is over once one side is
 * rolled back, a lock timeout has already waited its 5 s, and the jitter keeps the same two loads from
 * meeting again in step). The loader's transaction is safe to run again from the start: it probes what
 * is stored under its locks and writes only the difference, its counts start from zero, its staging
 * tables are emptied by the rollback. A conflict that outlives the attempts goes to the caller, whose
 * `classifyFailure` says `conflict`: a job waits 1 s without spending an attempt, the stream holds its
 * frames and commits them again.
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
