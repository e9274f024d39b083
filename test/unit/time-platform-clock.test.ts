import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPlatformClock, STALE_AFTER_MS } from '../../src/time/platform-clock.ts';

const T0 = Date.UTC(2026, 2, 15, 12, 0, 0);
const httpDate = (ms: number) => new Date(ms).toUTCString();

describe('the platform clock', () => {
  it('is the worker clock, offset unknown, before any answer', () => {
    let now = T0;
    const clock = createPlatformClock(() => now);
    expect(clock.now()).toBe(T0);
    expect(clock.reading()).toEqual({
      offsetMs: 0,
      uncertaintyMs: Number.POSITIVE_INFINITY,
      observedAt: undefined,
    });
    now += 5;
    expect(clock.earliestNow()).toBe(T0 + 5);
  });

  it('bounds the offset by the Date header and the request time, whichever way the clocks differ', () => {
    for (const skew of [20 * 60_000, -20 * 60_000, 1234, -999]) {
      let now = T0;
      const clock = createPlatformClock(() => now);
      // The platform answered at worker time T0 + 40, i.e. its own T0 + 40 + skew; sent at T0, received T0 + 80.
      clock.observeDateHeader(httpDate(T0 + 40 + skew), T0, T0 + 80);
      now = T0 + 80;
      const { offsetMs, uncertaintyMs } = clock.reading();
      expect(Math.abs(offsetMs - skew)).toBeLessThanOrEqual(uncertaintyMs);
      expect(uncertaintyMs).toBeLessThanOrEqual(541);
      // The earliest now is never after the platform's real now.
      expect(clock.earliestNow()).toBeLessThanOrEqual(now + skew);
    }
  });

  it('tightens to the best observations: any answers, the true offset stays inside the interval', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -3_600_000, max: 3_600_000 }),
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 30_000 }),
            rtt: fc.integer({ min: 0, max: 3_000 }),
            at: fc.double({ min: 0, max: 1, noNaN: true }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        (skew, answers) => {
          let now = T0;
          const clock = createPlatformClock(() => now);
          for (const a of answers) {
            now += a.gap;
            const sent = now;
            const answeredAt = sent + Math.floor(a.at * a.rtt);
            now = sent + a.rtt;
            clock.observeDateHeader(httpDate(answeredAt + skew), sent, now);
            const r = clock.reading();
            expect(Math.abs(r.offsetMs - skew)).toBeLessThanOrEqual(r.uncertaintyMs + 1);
            expect(clock.earliestNow()).toBeLessThanOrEqual(now + skew);
          }
        },
      ),
    );
  });

  it('reads pokes to the millisecond and starts again when a clock moves', () => {
    let now = T0;
    const clock = createPlatformClock(() => now);
    clock.observeDateHeader(httpDate(T0 - 60_000), T0, T0 + 10);
    clock.observeInstant(T0 + 500 - 3 - 60_000, T0 + 500);
    expect(Math.abs(clock.reading().offsetMs - -60_000)).toBeLessThanOrEqual(clock.reading().uncertaintyMs);
    expect(clock.reading().uncertaintyMs).toBeLessThanOrEqual(500);
    // The worker's clock is stepped 10 minutes forward: the next answer contradicts the interval.
    now = T0 + 10 * 60_000 + 1000;
    clock.observeDateHeader(httpDate(T0 + 1000 - 60_000), now, now + 20);
    expect(Math.round(clock.reading().offsetMs / 1000)).toBe(-11 * 60);
  });

  it('lets an interval go stale so a drifting clock is followed', () => {
    let now = T0;
    const clock = createPlatformClock(() => now);
    clock.observeDateHeader(httpDate(T0 + 5000), T0, T0);
    now += STALE_AFTER_MS + 1;
    // 800 ms of drift: still inside the old interval's reach, but the old interval is stale.
    clock.observeDateHeader(httpDate(now + 5800), now, now + 300);
    expect(clock.reading().observedAt).toBe(now + 300);
    expect(clock.reading().uncertaintyMs).toBeGreaterThan(500);
  });

  it('ignores answers without a readable Date', () => {
    const clock = createPlatformClock(() => T0);
    clock.observeDateHeader(undefined, T0, T0);
    clock.observeDateHeader('yesterday-ish', T0, T0);
    expect(clock.reading().observedAt).toBeUndefined();
  });
});
