/**
 * The loader's retry of a whole transaction that PostgreSQL rolled back because it lost a race with
 * another one: `40P01` (the deadlock detector chose it) or `40001` (serialization failure), the
 * `CONFLICT_CODES` of src/errors/error-codes.ts. Why and how: ../README.md, "`loader/retry-on-conflict.ts`".
 */
import { CONFLICT_CODES, errorCodeIn } from '../../errors/index.ts';
import { type BackoffOptions, backoffDelay } from '../../time/backoff-delay.ts';
import { type Clock, systemClock } from '../../time/clock.ts';
import type { Warehouse } from '../open-warehouse.ts';

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
