/**
 * What a backfill will cost before it starts: the requests its pending windows take (one each, one per
 * 1,000 users for the listing) and the hours they take at the token's paced rate, so a range of
 * decades is not started by accident (`backfill` asks for `--yes` beyond `CONFIRM_ABOVE_HOURS` when a
 * terminal is attached).
 */
import { bucketParams } from '../budget/request-budget.ts';
import type { BackfillEstimate } from '../warehouse/backfill-plan.ts';

/** A backfill longer than this asks before it starts (when someone is there to answer). */
export const CONFIRM_ABOVE_HOURS = 1;

/** Users per page of the users listing (the platform's maximum `limit`). */
const USERS_PER_PAGE = 1000;

export interface BackfillCost {
  /** Windows left to fetch (a resumed run skips the done ones). */
  pending: number;
  /** About: one per pending window, plus the users listing. Pages past the first of connection events add a few. */
  requests: number;
  /** What the token's request budget passes per hour (the limit, paced to 95 %). */
  usablePerHour: number;
  hours: number;
}

export function backfillCost(
  estimate: BackfillEstimate,
  options: { requestsPerHour: number; listsUsers: boolean },
): BackfillCost {
  const pending = estimate.windows - estimate.done;
  const listing = options.listsUsers ? Math.max(1, Math.ceil(estimate.users / USERS_PER_PAGE)) : 0;
  const requests = pending + listing;
  // The bucket the run takes every request from: its refill over an hour plus its burst.
  const bucket = bucketParams({ limit: options.requestsPerHour });
  const usablePerHour = Math.floor(bucket.ratePerMs * 3_600_000 + bucket.capacity);
  return { pending, requests, usablePerHour, hours: requests / usablePerHour };
}

/** "about 19,838 requests, 10.4 hours at 1,900 requests an hour". */
export function formatBackfillCost(estimate: BackfillEstimate, cost: BackfillCost): string {
  const resumed = estimate.done > 0 ? ` (resuming: ${number(estimate.done)} already done)` : '';
  return `${plural(estimate.users, 'user')}, ${plural(estimate.windows, 'window')}${resumed}: about ${number(cost.requests)} requests, ${formatHours(cost.hours)} at ${number(cost.usablePerHour)} requests an hour (VALIDIC_REQUESTS_PER_HOUR paced to 95 %; longer while a worker shares the token)`;
}

function plural(n: number, unit: string): string {
  return `${number(n)} ${unit}${n === 1 ? '' : 's'}`;
}

function number(n: number): string {
  return n.toLocaleString('en-US');
}

function formatHours(hours: number): string {
  if (hours < 1 / 60) return 'under a minute';
  if (hours < 1) return plural(Math.round(hours * 60), 'minute');
  if (hours < 48) return `${hours.toFixed(1)} hours`;
  return `${(hours / 24).toFixed(1)} days`;
}
