/**
 * The one table of retry options (attempts, including the first, and exponential back-off from `delay`
 * ms). A job definition picks the row that fits its kind of work instead of numbers of its own.
 */
export interface RetryOptions {
  /** Total attempts, including the first. */
  attempts: number;
  backoff: { type: 'exponential'; delay: number };
}

export const JOB_RETRIES = {
  /** A unit of platform fetches and loads (a window, a page run, a record): worth several tries. */
  fetch: { attempts: 5, backoff: { type: 'exponential', delay: 2000 } },
  /** Planning and fan-out (ticks, backfill plans): cheap to redo, and the next schedule tick repeats it. */
  plan: { attempts: 3, backoff: { type: 'exponential', delay: 5000 } },
  /** Housekeeping in Postgres (pruning, partitions): daily, so a minute between tries is fine. */
  housekeeping: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } },
} as const satisfies Record<string, RetryOptions>;
