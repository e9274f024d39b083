import { afterEach, describe, expect, it } from 'vitest';
import { budgetKeyOf, createBudgetRegistry, createRequestBudget } from '../../src/budget/request-budget.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';

let redis: TestRedis | undefined;
afterEach(async () => {
  await redis?.cleanup();
  redis = undefined;
});

// 600 per minute = 10 per second, burst 5.
const RATE = { limit: 600, windowMs: 60_000, capacity: 5, utilization: 1 } as const;

describe('Redis-shared request budget', () => {
  it('two processes sharing a token never exceed the rate together', async () => {
    redis = createTestRedis('budget');
    const a = createRequestBudget({ redis: redis.connect(), keyPrefix: redis.prefix, key: 'k', rate: RATE });
    const b = createRequestBudget({ redis: redis.connect(), keyPrefix: redis.prefix, key: 'k', rate: RATE });
    const grants: Array<{ who: string; at: number }> = [];
    const target = 30;
    const run = async (who: string, budget: typeof a) => {
      while (grants.length < target) {
        await budget.take();
        grants.push({ who, at: performance.now() });
      }
    };
    const started = performance.now();
    await Promise.all([run('a', a), run('b', b), run('a', a), run('b', b)]);
    // Both instances drew from the same bucket.
    expect(grants.some((g) => g.who === 'a')).toBe(true);
    expect(grants.some((g) => g.who === 'b')).toBe(true);
    // Count grants in every one-second interval: at most burst + 10 refilled, plus the 4 loops whose
    // grants may resolve together locally after an event-loop pause.
    const times = grants.map((g) => g.at - started);
    for (const t0 of times) {
      const inSecond = times.filter((t) => t >= t0 && t < t0 + 1000).length;
      expect(inSecond).toBeLessThanOrEqual(RATE.capacity + 10 + 4);
    }
    // Overall: never more than burst + refill over the whole run.
    const elapsedSeconds = times[times.length - 1]! / 1000;
    expect(grants.length).toBeLessThanOrEqual(RATE.capacity + Math.ceil(elapsedSeconds * 10) + 4);
    expect(grants.length).toBeGreaterThanOrEqual(target);
  });

  it('keys the bucket by a hash of the token and exposes remaining()', async () => {
    redis = createTestRedis('budget-key');
    const client = redis.connect();
    const registry = createBudgetRegistry({ rate: RATE, redis: client, keyPrefix: redis.prefix });
    const budget = registry.forKey('plain-token-value');
    expect(await budget.remaining()).toBe(5);
    await budget.take();
    await budget.take();
    expect(await budget.remaining()).toBeLessThanOrEqual(4);
    const keys = await client.keys(`${redis.prefix}*`);
    expect(keys).toEqual([`${redis.prefix}${budgetKeyOf('plain-token-value')}`]);
    expect(keys.join()).not.toContain('plain-token-value');
    expect(await client.pttl(keys[0]!)).toBeGreaterThan(0);
  });

  it('stops waiting when the signal aborts', async () => {
    redis = createTestRedis('budget-abort');
    const budget = createRequestBudget({
      redis: redis.connect(),
      keyPrefix: redis.prefix,
      key: 'slow',
      rate: { limit: 1, windowMs: 3_600_000, capacity: 1 },
    });
    await budget.take();
    const controller = new AbortController();
    const waiting = budget.take(controller.signal);
    setImmediate(() => controller.abort(new Error('shutdown')));
    await expect(waiting).rejects.toThrow('shutdown');
  });

  it("lowers the fleet's rate once per 429 epoch, holds a Retry-After for every process, and climbs back on success", async () => {
    redis = createTestRedis('budget-aimd');
    const rate = { limit: 3600, windowMs: 3_600_000, capacity: 5, utilization: 1 };
    const a = createRequestBudget({ redis: redis.connect(), keyPrefix: redis.prefix, key: 'aimd', rate });
    const b = createRequestBudget({ redis: redis.connect(), keyPrefix: redis.prefix, key: 'aimd', rate });
    const configured = await a.grantedPerHour();
    expect(configured).toBeCloseTo(3600 - 5, 0);
    const first = await a.take();
    const second = await b.take();
    // Two requests of the same epoch answered 429: one decrease.
    await a.rateLimited(first, undefined);
    await b.rateLimited(second, undefined);
    expect(await b.grantedPerHour()).toBeCloseTo(0.7 * configured, 0);
    // A Retry-After told by one process holds the other's next token.
    const third = await b.take();
    expect(third.epoch).toBe(first.epoch + 1);
    await b.rateLimited(third, 1500);
    const started = performance.now();
    await a.ready();
    expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
    expect(await a.grantedPerHour()).toBeCloseTo(0.49 * configured, 0);
    // The lowered rate outlives an idle bucket (kept for the limit's hour).
    const client = redis.connect();
    const [key] = await client.keys(`${redis.prefix}*`);
    expect(await client.pttl(key!)).toBeGreaterThan(3_000_000);
    // Successes raise it, reported with the next take.
    for (let i = 0; i < 50; i++) a.succeeded();
    await a.take();
    expect(await b.grantedPerHour()).toBeCloseTo(0.49 * configured * 1.0008 ** 50, 0);
  });
});
