/**
 * The request budget shared by a fleet: the bucket is a Redis hash updated by one Lua script, so the
 * refill-and-take is atomic across processes. The script reads Redis's own clock (TIME), so machines
 * with skewed clocks still agree. Only the (clock-independent) wait between tries uses the local clock.
 */

import type { RequestBudget } from '../http/request-budget-types.ts';
import type { Clock } from '../time/clock.ts';
import { type BudgetRate, bucketParams } from './token-bucket.ts';

/** The part of an ioredis client we use. */
export interface RedisEvalClient {
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

// Mirrors takeToken() in token-bucket.ts. Returns {granted 0|1, tokens-or-wait as string} (Lua numbers
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
