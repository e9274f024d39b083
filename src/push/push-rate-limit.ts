/**
 * Notifications accepted per organization per minute (`push.ratePerMinute`): a fixed one-minute window
 * counter, in Redis when the worker has it (so a fleet behind one push URL shares the limit), else in
 * this process. Hand-written rather than the request budget (src/budget/request-budget.ts): that one
 * WAITS for a token, while a push over the limit must be refused at once (429): it is the cap that
 * protects the service, and a counter per minute is two Redis commands. The count of refusals tells the
 * caller which refusal of the minute this is (the first, and every 100th, are recorded).
 */

/** The part of an ioredis client used here. */
export interface RateRedis {
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

export interface RateTake {
  /** Within the minute's limit. */
  allowed: boolean;
  /** Refusals this minute so far, this one included (0 when allowed). */
  refused: number;
}

export interface PushRateLimit {
  /** Counts one notification for `key`: whether the minute's limit admits it. */
  take(key: string): Promise<RateTake>;
}

// INCR and set the expiry on the first count, atomically.
const INCR_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`;

export function createPushRateLimit(options: {
  perMinute: number;
  redis?: RateRedis;
  /** Redis key prefix, e.g. `validic-sync`. */
  prefix?: string;
  now?: () => number;
}): PushRateLimit {
  const now = options.now ?? Date.now;
  const minuteOf = () => Math.floor(now() / 60_000);
  const verdict = (count: number): RateTake => ({
    allowed: count <= options.perMinute,
    refused: Math.max(0, count - options.perMinute),
  });
  if (options.redis) {
    const redis = options.redis;
    const prefix = options.prefix ?? 'validic-sync';
    return {
      async take(key) {
        const redisKey = `${prefix}:push-rate:${encodeURIComponent(key)}:${minuteOf()}`;
        return verdict(Number(await redis.eval(INCR_SCRIPT, 1, redisKey, 120_000)));
      },
    };
  }
  const counts = new Map<string, number>();
  let minute = minuteOf();
  return {
    async take(key) {
      const current = minuteOf();
      if (current !== minute) {
        counts.clear();
        minute = current;
      }
      const count = (counts.get(key) ?? 0) + 1;
      counts.set(key, count);
      return verdict(count);
    },
  };
}
