/**
 * Token-bucket maths shared by the in-process and the Redis budgets (the Lua script mirrors it). Pure.
 *
 * Sizing: the platform allows `limit` requests per token per `windowMs` (2,000 per hour by default) and
 * says nothing about how it counts, so we assume the strictest reading (any sliding window). A bucket of
 * `capacity` tokens refilled at `ratePerMs` grants at most `capacity + ratePerMs·windowMs` requests in any
 * window. We spend `utilization` (default 95 %) of the limit: the refill rate is set so that burst +
 * refill over a window equals `utilization·limit`. A long backfill then runs at ≈ 94 % of the budget and
 * can never draw a 429, even when it started with a full bucket. The burst is kept small (≤ 1 % of the
 * limit, at most 20) so the hour's budget is spread evenly instead of spent in the first minutes.
 */

export interface BudgetRate {
  /** Requests the platform allows per window (default window one hour: `VALIDIC_REQUESTS_PER_HOUR`). */
  limit: number;
  /** Window of the limit in ms (default 3,600,000). */
  windowMs?: number;
  /** Share of the limit we use, (0, 1] (default 0.95): headroom for other clients of the same token. */
  utilization?: number;
  /** Bucket capacity (burst); default max(1, min(20, floor(limit / 100))). */
  capacity?: number;
}

export interface BucketParams {
  capacity: number;
  /** Tokens added per millisecond. */
  ratePerMs: number;
}

export function bucketParams(rate: BudgetRate): BucketParams {
  const windowMs = rate.windowMs ?? 3_600_000;
  const utilization = rate.utilization ?? 0.95;
  if (!(rate.limit > 0)) throw new RangeError(`request budget limit must be > 0, got ${rate.limit}`);
  if (!(utilization > 0 && utilization <= 1))
    throw new RangeError('request budget utilization must be in (0, 1]');
  const target = rate.limit * utilization;
  const capacity = rate.capacity ?? Math.max(1, Math.min(20, Math.floor(rate.limit / 100)));
  // Whatever the burst, refill + burst over one window stays within the target.
  const refill = Math.max(target - capacity, target / 2);
  return { capacity, ratePerMs: refill / windowMs };
}

export interface BucketState {
  tokens: number;
  /** Time of the last update, ms. */
  updatedAt: number;
}

export interface TakeResult {
  state: BucketState;
  granted: boolean;
  /** When not granted: ms until one token is available. */
  waitMs: number;
}

/** Refills for the time elapsed, then takes one token if there is one. */
export function takeToken(state: BucketState | undefined, params: BucketParams, now: number): TakeResult {
  const tokens = refill(state, params, now);
  if (tokens >= 1) return { state: { tokens: tokens - 1, updatedAt: now }, granted: true, waitMs: 0 };
  return {
    state: { tokens, updatedAt: now },
    granted: false,
    waitMs: Math.max(1, Math.ceil((1 - tokens) / params.ratePerMs)),
  };
}

/** Tokens available at `now` (fractional). */
export function refill(state: BucketState | undefined, params: BucketParams, now: number): number {
  if (!state) return params.capacity;
  const elapsed = Math.max(0, now - state.updatedAt);
  return Math.min(params.capacity, state.tokens + elapsed * params.ratePerMs);
}
