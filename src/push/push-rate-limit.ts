/**
 * Notifications accepted per organization per minute (`push.ratePerMinute`): a fixed one-minute window
 * counter, in Redis when the worker has it (so a fleet behind one push URL shares the limit), else in
 * this process. Hand-written rather than the request budget (src/http/request-budget.ts): that one
 * WAITS for a token, while a push over the limit must be refused at once (429) so the sender retries
 * later; a counter per minute is two Redis commands.
 */

/** The part of an ioredis client used here. */
export interface RateRedis {
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

export interface PushRateLimit {
  /** Counts one notification for `key`; false when the minute's limit is already reached. */
  take(key: string): Promise<boolean>;
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
  if (options.redis) {
    const redis = options.redis;
    const prefix = options.prefix ?? 'validic-sync';
    return {
      async take(key) {
        const redisKey = `${prefix}:push-rate:${encodeURIComponent(key)}:${minuteOf()}`;
        const count = Number(await redis.eval(INCR_SCRIPT, 1, redisKey, 120_000));
        return count <= options.perMinute;
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
      return count <= options.perMinute;
    },
  };
}
