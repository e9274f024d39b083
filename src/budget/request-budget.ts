/**
 * The request budget: the platform allows ~2,000 requests per token per hour and documents no rate-limit
 * headers, so the client paces itself. Every request (each retry attempt and each stream connect too)
 * first takes a token from the bucket of its API token: in this process, or in Redis so a fleet of workers
 * shares one budget per token. Buckets are keyed by a hash of the token, never the token itself.
 */
import { createHash } from 'node:crypto';
import type { BudgetRegistry, RequestBudget } from '../http/http-client-types.ts';
import { type Clock, systemClock } from '../time/clock.ts';

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

/**
 * Budgets are per token, but a token must never be stored or shown: the key is a hash of it. SHA-256
 * truncated to 16 hex chars is enough to keep tokens apart and reveals nothing usable.
 */
export function budgetKeyOf(token: string): string {
  return createHash('sha256').update(`validic-sync:budget:${token}`).digest('hex').slice(0, 16);
}

/**
 * The request budget of one process (no Redis): a token bucket in memory. Taking a token is synchronous,
 * so concurrent callers in the process cannot both take the last one.
 */

export interface InMemoryRequestBudgetOptions {
  key: string;
  rate: BudgetRate;
  clock: Clock;
}

export function createInMemoryRequestBudget(options: InMemoryRequestBudgetOptions): RequestBudget {
  const params = bucketParams(options.rate);
  const { clock } = options;
  let state: BucketState | undefined;
  return {
    key: options.key,
    async take(signal?: AbortSignal): Promise<void> {
      for (;;) {
        signal?.throwIfAborted();
        const result = takeToken(state, params, clock.now());
        state = result.state;
        if (result.granted) return;
        await clock.sleep(result.waitMs, signal);
      }
    },
    async remaining(): Promise<number> {
      return Math.floor(refill(state, params, clock.now()));
    },
  };
}

/**
 * The request budget shared by a fleet: the bucket is a Redis hash updated by one Lua script, so the
 * refill-and-take is atomic across processes. The script reads Redis's own clock (TIME), so machines
 * with skewed clocks still agree. Only the (clock-independent) wait between tries uses the local clock.
 */

/** The part of an ioredis client we use. */
export interface RedisEvalClient {
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

// Mirrors takeToken() above. Returns {granted 0|1, tokens-or-wait as string} (Lua numbers
// returned to Redis are truncated to integers, hence strings). A bucket idle long enough to be full again
// expires, so abandoned tokens leave no keys behind.
const TAKE_SCRIPT = `
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local take = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local data = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(data[1])
local ts = tonumber(data[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
end
local elapsed = now - ts
if elapsed < 0 then elapsed = 0 end
tokens = math.min(capacity, tokens + elapsed * rate)
local ttl = math.ceil(capacity / rate) + 1000
if take == 0 then
  return {0, tostring(tokens)}
end
if tokens >= 1 then
  tokens = tokens - 1
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, tostring(tokens)}
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], ttl)
return {0, tostring(math.ceil((1 - tokens) / rate))}
`;

export interface RedisRequestBudgetOptions {
  redis: RedisEvalClient;
  key: string;
  keyPrefix: string;
  rate: BudgetRate;
  clock: Clock;
}

export function createRedisRequestBudget(options: RedisRequestBudgetOptions): RequestBudget {
  const params = bucketParams(options.rate);
  const redisKey = `${options.keyPrefix}${options.key}`;
  const run = async (take: 0 | 1): Promise<[number, number]> => {
    const reply = (await options.redis.eval(
      TAKE_SCRIPT,
      1,
      redisKey,
      String(params.capacity),
      String(params.ratePerMs),
      take,
    )) as [number | string, string];
    return [Number(reply[0]), Number(reply[1])];
  };
  return {
    key: options.key,
    async take(signal?: AbortSignal): Promise<void> {
      for (;;) {
        signal?.throwIfAborted();
        const [granted, value] = await run(1);
        if (granted === 1) return;
        await options.clock.sleep(Math.max(1, value), signal);
      }
    },
    async remaining(): Promise<number> {
      const [, tokens] = await run(0);
      return Math.floor(tokens);
    },
  };
}

/**
 * The request budget: the platform allows ~2,000 requests per token per hour and documents no rate-limit
 * headers, so the client paces itself. Every request (each retry attempt and each stream connect too)
 * first takes a token from the bucket of its API token.
 *
 * With Redis the bucket lives in Redis, so a fleet of workers shares one budget per token; without, it
 * lives in this process. Buckets are keyed by a hash of the token, never the token itself.
 */

export interface BudgetRegistryOptions {
  rate: BudgetRate;
  /** ioredis client: buckets are shared by every process using the same Redis and prefix. */
  redis?: RedisEvalClient;
  /** Redis key prefix (default `validic-sync:budget:`). */
  keyPrefix?: string;
  clock?: Clock;
}

export function createBudgetRegistry(options: BudgetRegistryOptions): BudgetRegistry {
  const budgets = new Map<string, RequestBudget>();
  return {
    forKey(tokenOrKey: string): RequestBudget {
      const key = budgetKeyOf(tokenOrKey);
      let budget = budgets.get(key);
      if (!budget) {
        budget = createRequestBudget({ ...options, key });
        budgets.set(key, budget);
      }
      return budget;
    },
  };
}

export interface RequestBudgetOptions extends BudgetRegistryOptions {
  /** Already-hashed key (see `budgetKeyOf`). */
  key: string;
}

export function createRequestBudget(options: RequestBudgetOptions): RequestBudget {
  const clock = options.clock ?? systemClock;
  if (options.redis) {
    return createRedisRequestBudget({
      redis: options.redis,
      key: options.key,
      keyPrefix: options.keyPrefix ?? 'validic-sync:budget:',
      rate: options.rate,
      clock,
    });
  }
  return createInMemoryRequestBudget({ key: options.key, rate: options.rate, clock });
}
