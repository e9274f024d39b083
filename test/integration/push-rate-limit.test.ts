/**
 * The per-org push rate in Redis: two processes (two limiters on one Redis prefix) share one count per
 * org and minute, and number the refusals alike; another org and the next minute start afresh. Real Redis.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createPushRateLimit } from '../../src/push/push-admission.ts';
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
    for (const limiter of [a, b, a, b, a]) taken.push(await limiter.take('org-a'));
    // The refusals are numbered fleet-wide: the first and every 100th of a minute get recorded.
    expect(taken).toEqual([
      { allowed: true, refused: 0 },
      { allowed: true, refused: 0 },
      { allowed: true, refused: 0 },
      { allowed: false, refused: 1 },
      { allowed: false, refused: 2 },
    ]);
    expect(await b.take('org-b')).toEqual({ allowed: true, refused: 0 });
    now += 60_000;
    expect(await a.take('org-a')).toEqual({ allowed: true, refused: 0 });
  });
});
