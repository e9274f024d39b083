/**
 * A list the platform paged out did not prove complete: fewer records than its own count
 * (`summary.results`, `meta.total`), a page repeating what was read, or no end in sight. What was read is
 * real data and is kept; what depends on the WHOLE list (a cursor moving past it, a record or user
 * counted gone because the list left it out) must not happen. Retried like a 5xx: the next read of the
 * same list usually completes (a list shifting under an offset pager heals), and a server that always
 * cuts the list short fails the job visibly after its attempts.
 */
import { SyncError } from './sync-error.ts';

export interface ListingCounts {
  /** Distinct records (or users) read. */
  listed: number;
  /** What the server said the list holds, when it said. */
  total: number | undefined;
}

export class IncompleteListingError extends SyncError {
  /** Read by classifyFailure: retry, spending an attempt. */
  readonly retryable = true;
  readonly listed: number;
  readonly total: number | undefined;

  constructor(what: string, detail: string, counts: ListingCounts) {
    const of = counts.total === undefined ? '' : ` of ${counts.total}`;
    super(`incomplete listing from ${what}: read ${counts.listed}${of} (${detail})`);
    this.listed = counts.listed;
    this.total = counts.total;
  }
}
