/**
 * Fleet-wide stream slots in real Redis: never more holders than the limit (and never more than the
 * platform's 3), release frees a slot, and a holder that stops renewing (its Redis connection gone, as
 * when its process dies) gives up its lease before the key lapses and another process takes it over.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_STREAM_CONNECTIONS } from '../../src/validic/platform-limits.ts';
import { createStreamSlots, streamSlotKey } from '../../src/worker/stream-supervisor.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';

describe('stream slots', () => {
  let testRedis: TestRedis;
  let prefix: string;

  beforeEach(() => {
    testRedis = createTestRedis('stream-slots');
    prefix = testRedis.prefix.slice(0, -1);
  });
  afterEach(async () => {
    await testRedis.cleanup();
  });

  it('hands out at most `max` slots fleet-wide, capped at 3, and frees them on release', async () => {
    const processes = Array.from({ length: 5 }, () =>
      createStreamSlots({ redis: testRedis.connect(), prefix, ttlMs: 3000 }),
    );
    const leases = await Promise.all(processes.map((p) => p.tryAcquire('org', 'main', 2)));
    expect(
      leases
        .filter(Boolean)
        .map((l) => l!.slot)
        .sort(),
    ).toEqual([0, 1]);

    const wide = await Promise.all(processes.map((p) => p.tryAcquire('org', 'other', 10)));
    expect(wide.filter(Boolean)).toHaveLength(MAX_STREAM_CONNECTIONS);

    const holders = await processes[0]!.holders('org', 'main');
    expect(Object.keys(holders)).toEqual(['0', '1']);
    const first = leases.find(Boolean)!;
    await first.release();
    expect(first.signal.aborted).toBe(true);
    const again = await processes[4]!.tryAcquire('org', 'main', 2);
    expect(again?.slot).toBe(first.slot);
    for (const p of processes) await p.releaseAll();
    expect(await processes[0]!.holders('org', 'main')).toEqual({});
  });

  it('keeps a renewed slot past its TTL, and hands over a slot whose holder stopped renewing', async () => {
    const dyingRedis = testRedis.connect();
    const dying = createStreamSlots({ redis: dyingRedis, prefix, ttlMs: 1200 });
    const waiting = createStreamSlots({ redis: testRedis.connect(), prefix, ttlMs: 1200 });
    const lease = await dying.tryAcquire('org', 's', 1);
    expect(lease?.slot).toBe(0);

    // While renewed, the slot outlives several TTLs.
    const renewedAt = Date.now();
    let pttl = 0;
    while (Date.now() - renewedAt < 3000) {
      pttl = await testRedis.connect().pttl(streamSlotKey(prefix, 'org', 's', 0));
      expect(pttl).toBeGreaterThan(0);
      expect(await waiting.tryAcquire('org', 's', 1)).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 300));
    }

    // The holder loses Redis (as when its process dies): it gives the lease up, and the other takes over.
    dyingRedis.disconnect();
    const controller = new AbortController();
    const takeover = await waiting.acquire('org', 's', 1, controller.signal);
    expect(lease!.signal.aborted).toBe(true);
    expect(takeover.slot).toBe(0);
    expect(await waiting.holders('org', 's')).toEqual({ 0: waiting.owner });
    await waiting.releaseAll();
    await dying.releaseAll();
  });
});
