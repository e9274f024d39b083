/**
 * The per-org push rate and the refusal counts in Redis: two processes (two limiters, two counters on
 * one Redis prefix) share one count per org and minute, and number the refusals alike; another org and
 * the next minute start afresh; a counter whose Redis does not answer still counts, in process. Real
 * Redis.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createPushRateLimit, createPushRefusalCounter } from '../../src/push/push-admission.ts';
import { createTestRedis } from '../helpers/redis.ts';

describe('push rate limit in Redis', () => {
  const testRedis = createTestRedis('push-rate');
  afterAll(() => testRedis.cleanup());

  it('is shared by the fleet, per org and minute', async () => {
    let now = Date.parse('2026-03-15T12:00:10Z');
    const make = () =>
      createPushRateLimit({
        perMinute: 3,
        redis: testRedis.connect(),
        prefix: testRedis.prefix.slice(0, -1),
        now: () => now,
      });
    const [a, b] = [make(), make()];
    const taken = [];
    for (const limiter of [a, b, a, b, a]) taken.push((await limiter.take('org-a')).allowed);
    expect(taken).toEqual([true, true, true, false, false]);
    expect(await b.take('org-b')).toEqual({ allowed: true });
    now += 60_000;
    expect(await a.take('org-a')).toEqual({ allowed: true });
  });

  it('numbers refusals fleet-wide per key and minute, and in process when Redis does not answer', async () => {
    let now = Date.parse('2026-03-15T12:00:10Z');
    const make = () =>
      createPushRefusalCounter({
        redis: testRedis.connect(),
        prefix: testRedis.prefix.slice(0, -1),
        now: () => now,
      });
    const [a, b] = [make(), make()];
    const counts = [];
    for (const counter of [a, b, a]) counts.push(await counter.count('org-a'));
    expect(counts).toEqual([1, 2, 3]);
    expect(await b.count('(listener)')).toBe(1);
    now += 60_000;
    expect(await a.count('org-a')).toBe(1);
    const away = new Redis({
      port: 1,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    away.on('error', () => {});
    const alone = createPushRefusalCounter({ redis: away, now: () => now });
    expect([await alone.count('org-a'), await alone.count('org-a')]).toEqual([1, 2]);
    away.disconnect();
  });
});
