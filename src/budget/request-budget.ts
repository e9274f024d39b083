/**
 * The request budget: the platform allows ~2,000 requests per token per hour and documents no rate-limit
 * headers, so the client paces itself. Every request (each retry attempt and each stream connect too)
 * first takes a token from the bucket of its API token: in this process, or in Redis so a fleet of workers
 * shares one budget per token. Buckets are keyed by a hash of the token, never the token itself.
 */
import { createHash } from 'node:crypto';
import type { BudgetRegistry, BudgetTicket, RequestBudget } from '../http/http-client-types.ts';
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
  /** Share of the configured rate granted now, (0, 1] (absent: 1): lowered on 429s, raised on success. */
  factor?: number;
  /** Counts the decreases: a 429 to a request sent before the last decrease lowers the rate no further. */
  epoch?: number;
  /** No token is granted before this time, ms (a `Retry-After` honoured by every process). */
  blockedUntil?: number;
}

export interface TakeResult {
  state: BucketState;
  granted: boolean;
  /** When not granted: ms until one token is available. */
  waitMs: number;
}

/**
 * How the granted rate follows the platform (additive increase, multiplicative decrease, as TCP
 * congestion control): the platform documents a limit per token but a contract, another client of the
 * same token or the platform's own state can grant less, and it says so only with 429s. A 429 multiplies
 * the granted share of the configured rate by `decrease` (once per decrease epoch: the answers to
 * requests already in flight when it was lowered lower it no further) and empties the bucket; each
 * success multiplies it by `growth` up to 1. With 0.7 and 1.0008 a cycle from one 429 back to the rate
 * that drew it is about 450 successful requests, so a platform that grants less sees well under 1 % of
 * 429s once the rate has been found, and the fleet spends about 85 % of what it is granted.
 */
export interface RateAdaptation {
  /** Factor applied on a 429 (default 0.7). */
  decrease: number;
  /** Factor applied per successful answer, up to the configured rate (default 1.0008). */
  growth: number;
  /** Lowest share of the configured rate (default 0.02). */
  minFactor: number;
}

export const RATE_ADAPTATION: RateAdaptation = { decrease: 0.7, growth: 1.0008, minFactor: 0.02 };

/** The share of the configured rate in force once `successes` answers succeeded. */
export function grownFactor(factor: number, successes: number, adaptation = RATE_ADAPTATION): number {
  if (successes <= 0 || factor >= 1) return Math.min(1, factor);
  return Math.min(1, factor * adaptation.growth ** successes);
}

/**
 * Refills for the time elapsed at the granted rate, then takes one token if there is one and no
 * `Retry-After` is in force. `successes`: answers that succeeded since the caller's previous take.
 */
export function takeToken(
  state: BucketState | undefined,
  params: BucketParams,
  now: number,
  successes = 0,
  adaptation = RATE_ADAPTATION,
): TakeResult {
  const factor = grownFactor(state?.factor ?? 1, successes, adaptation);
  const tokens = refill(state, params, now);
  const next: BucketState = { ...state, tokens, updatedAt: now, factor };
  const blockedUntil = state?.blockedUntil ?? 0;
  if (now < blockedUntil) return { state: next, granted: false, waitMs: blockedUntil - now };
  if (tokens >= 1) return { state: { ...next, tokens: tokens - 1 }, granted: true, waitMs: 0 };
  return {
    state: next,
    granted: false,
    waitMs: Math.max(1, Math.ceil((1 - tokens) / (params.ratePerMs * factor))),
  };
}

/** Tokens available at `now` (fractional), refilled at the granted rate into a burst scaled the same way. */
export function refill(state: BucketState | undefined, params: BucketParams, now: number): number {
  const factor = state?.factor ?? 1;
  const capacity = Math.max(1, params.capacity * factor);
  if (!state) return capacity;
  const elapsed = Math.max(0, now - state.updatedAt);
  return Math.min(capacity, state.tokens + elapsed * params.ratePerMs * factor);
}

/**
 * A 429 to a request whose token was taken in `epoch`: the first such answer of an epoch lowers the
 * granted rate and empties the bucket; a `Retry-After` holds every token until it has passed.
 */
export function rateLimitedState(
  state: BucketState | undefined,
  params: BucketParams,
  now: number,
  epoch: number,
  retryAfterMs: number | undefined,
  adaptation = RATE_ADAPTATION,
): BucketState {
  const current: BucketState = state ?? { tokens: params.capacity, updatedAt: now };
  const next: BucketState = { ...current, tokens: refill(state, params, now), updatedAt: now };
  if (epoch === (current.epoch ?? 0)) {
    next.factor = Math.max(adaptation.minFactor, (current.factor ?? 1) * adaptation.decrease);
    next.epoch = epoch + 1;
    next.tokens = 0;
  }
  if (retryAfterMs !== undefined && retryAfterMs > 0) {
    next.blockedUntil = Math.max(current.blockedUntil ?? 0, now + retryAfterMs);
  }
  return next;
}

/** The configured usable rate of a limit, requests per hour (what the budget grants until a 429). */
export function usablePerHour(limit: number): number {
  return bucketParams({ limit }).ratePerMs * 3_600_000;
}

/** Requests per hour granted now: the configured usable rate times the share in force. */
export function grantedPerHour(params: BucketParams, factor: number): number {
  return params.ratePerMs * 3_600_000 * factor;
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
  let successes = 0;
  return {
    key: options.key,
    async take(signal?: AbortSignal): Promise<BudgetTicket> {
      for (;;) {
        signal?.throwIfAborted();
        const result = takeToken(state, params, clock.now(), successes);
        successes = 0;
        state = result.state;
        if (result.granted) return { epoch: state.epoch ?? 0 };
        await clock.sleep(result.waitMs, signal);
      }
    },
    async ready(signal?: AbortSignal): Promise<void> {
      for (;;) {
        signal?.throwIfAborted();
        const waitMs = (state?.blockedUntil ?? 0) - clock.now();
        if (waitMs <= 0) return;
        await clock.sleep(waitMs, signal);
      }
    },
    async rateLimited(ticket, retryAfterMs) {
      state = rateLimitedState(state, params, clock.now(), ticket.epoch, retryAfterMs);
    },
    succeeded() {
      successes++;
    },
    async remaining(): Promise<number> {
      return Math.floor(refill(state, params, clock.now()));
    },
    async grantedPerHour(): Promise<number> {
      return grantedPerHour(params, grownFactor(state?.factor ?? 1, successes));
    },
  };
}

/**
 * The request budget shared by a fleet: the bucket is a Redis hash updated by Lua scripts, so the
 * refill-and-take, the decrease on a 429 and the fleet-wide `Retry-After` are atomic across processes.
 * The scripts read Redis's own clock (TIME), so machines with skewed clocks still agree. Only the
 * (clock-independent) wait between tries uses the local clock.
 */

/** The part of an ioredis client we use. */
export interface RedisEvalClient {
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

// Shared head of both scripts: reads the bucket and refills it at the granted rate (refill() above).
// A bucket at the configured rate expires once idle long enough to be full again, so abandoned tokens
// leave no keys behind; a lowered rate or a Retry-After is remembered for an hour (the limit's window).
const READ_BUCKET = `
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local data = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 'factor', 'epoch', 'until')
local factor = tonumber(data[3]) or 1
local epoch = tonumber(data[4]) or 0
local blocked = tonumber(data[5]) or 0
local cap = math.max(1, capacity * factor)
local tokens = tonumber(data[1])
local ts = tonumber(data[2])
if tokens == nil or ts == nil then
  tokens = cap
  ts = now
end
local elapsed = now - ts
if elapsed < 0 then elapsed = 0 end
tokens = math.min(cap, tokens + elapsed * rate * factor)
local function save()
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now), 'factor', tostring(factor),
    'epoch', tostring(epoch), 'until', tostring(blocked))
  local ttl = math.ceil(capacity / rate) + 1000
  if factor < 1 or blocked > now then ttl = math.max(ttl, 3600000) end
  redis.call('PEXPIRE', KEYS[1], ttl)
end
`;

// Mirrors takeToken() above: ARGV[3] take (0: only read), ARGV[4] successes since the caller's last
// take, ARGV[5] growth per success. Returns {granted 0|1, tokens-or-wait, factor, epoch} (Lua numbers
// returned to Redis are truncated to integers, hence strings).
const TAKE_SCRIPT = `${READ_BUCKET}
local successes = tonumber(ARGV[4])
if successes > 0 and factor < 1 then factor = math.min(1, factor * tonumber(ARGV[5]) ^ successes) end
if tonumber(ARGV[3]) == 0 then
  return {0, tostring(tokens), tostring(factor), epoch}
end
if now < blocked then
  save()
  return {0, tostring(blocked - now), tostring(factor), epoch}
end
if tokens >= 1 then
  tokens = tokens - 1
  save()
  return {1, tostring(tokens), tostring(factor), epoch}
end
save()
return {0, tostring(math.ceil((1 - tokens) / (rate * factor))), tostring(factor), epoch}
`;

// Mirrors rateLimitedState() above: ARGV[3] the ticket's epoch, ARGV[4] Retry-After ms (-1: none),
// ARGV[5] decrease, ARGV[6] least factor.
const RATE_LIMITED_SCRIPT = `${READ_BUCKET}
if tonumber(ARGV[3]) == epoch then
  factor = math.max(tonumber(ARGV[6]), factor * tonumber(ARGV[5]))
  epoch = epoch + 1
  tokens = 0
end
local retryAfter = tonumber(ARGV[4])
if retryAfter > 0 then blocked = math.max(blocked, now + retryAfter) end
save()
return {tostring(factor), epoch}
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
  const head = [1, redisKey, String(params.capacity), String(params.ratePerMs)] as const;
  // Successes counted here and handed to the next take's script: no extra round trip per answer.
  let successes = 0;
  const run = async (
    take: 0 | 1,
  ): Promise<{ granted: boolean; value: number; factor: number; epoch: number }> => {
    // A read (take 0) saves nothing, so it hands no successes over.
    const reported = take === 1 ? successes : 0;
    successes -= reported;
    let reply: [number | string, string, string, number | string];
    try {
      reply = (await options.redis.eval(
        TAKE_SCRIPT,
        ...head,
        take,
        reported,
        String(RATE_ADAPTATION.growth),
      )) as typeof reply;
    } catch (error) {
      successes += reported;
      throw error;
    }
    return {
      granted: Number(reply[0]) === 1,
      value: Number(reply[1]),
      factor: Number(reply[2]),
      epoch: Number(reply[3]),
    };
  };
  return {
    key: options.key,
    async take(signal?: AbortSignal): Promise<BudgetTicket> {
      for (;;) {
        signal?.throwIfAborted();
        const result = await run(1);
        if (result.granted) return { epoch: result.epoch };
        await options.clock.sleep(Math.max(1, result.value), signal);
      }
    },
    async ready(signal?: AbortSignal): Promise<void> {
      for (;;) {
        signal?.throwIfAborted();
        const reply = (await options.redis.eval(
          `${READ_BUCKET}\nreturn tostring(math.max(0, blocked - now))`,
          ...head,
        )) as string;
        const waitMs = Number(reply);
        if (!(waitMs > 0)) return;
        await options.clock.sleep(waitMs, signal);
      }
    },
    async rateLimited(ticket, retryAfterMs) {
      await options.redis.eval(
        RATE_LIMITED_SCRIPT,
        ...head,
        ticket.epoch,
        retryAfterMs !== undefined && retryAfterMs > 0 ? Math.ceil(retryAfterMs) : -1,
        String(RATE_ADAPTATION.decrease),
        String(RATE_ADAPTATION.minFactor),
      );
    },
    succeeded() {
      successes++;
    },
    async remaining(): Promise<number> {
      return Math.floor((await run(0)).value);
    },
    async grantedPerHour(): Promise<number> {
      return grantedPerHour(params, (await run(0)).factor);
    },
  };
}

/** The granted rate of a token's bucket as the fleet last left it (for `status`, which takes no token). */
export async function readGrantedPerHour(
  redis: RedisEvalClient,
  keyPrefix: string,
  token: string,
  rate: BudgetRate,
): Promise<number> {
  const budget = createRedisRequestBudget({
    redis,
    key: budgetKeyOf(token),
    keyPrefix,
    rate,
    clock: systemClock,
  });
  return budget.grantedPerHour();
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
