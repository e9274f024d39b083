/**
 * The drain's gate: an hour cut into whole windows so that no hour can hold more than push's cap; per
 * drain at most what the rate allows since the last claim; never more in flight than a window. Driven
 * with random drain times and fetch sizes, no sliding window and no hour ever holds more than allowed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pushDrainAllowance, pushDrainWindow } from '../../src/push/process-push-notification.ts';

const HOUR = 3_600_000;
const TICK = 60_000;

describe('pushDrainWindow', () => {
  it('cuts the hour into whole windows of about the preferred length, the cap spread over them', () => {
    expect(pushDrainWindow(752, 10 * TICK)).toEqual({ windowMs: 600_000, perWindow: 125 });
    expect(pushDrainWindow(7, 10 * TICK)).toEqual({ windowMs: 600_000, perWindow: 1 });
    // Fewer requests an hour than windows: longer windows of one.
    expect(pushDrainWindow(3, 10 * TICK)).toEqual({ windowMs: 1_200_000, perWindow: 1 });
    expect(pushDrainWindow(0.5, 10 * TICK)).toEqual({ windowMs: HOUR, perWindow: 0 });
    expect(pushDrainWindow(100, 7 * TICK)).toEqual({ windowMs: HOUR / 9, perWindow: 11 });
  });
});

describe('pushDrainAllowance', () => {
  const window = pushDrainWindow(752, 10 * TICK);
  const at = (now: number, more: Partial<Parameters<typeof pushDrainAllowance>[0]> = {}) =>
    pushDrainAllowance({
      window,
      tickMs: TICK,
      claimedInWindow: 0,
      inFlight: 0,
      lastClaimAt: null,
      now,
      ...more,
    });

  it("takes a tick's worth first, at most two ticks' worth after a quiet spell, what the window leaves", () => {
    expect(at(0)).toBe(13);
    expect(at(HOUR, { lastClaimAt: 0 })).toBe(25);
    expect(at(10_000, { lastClaimAt: 0 })).toBe(3);
    expect(at(HOUR, { lastClaimAt: 0, claimedInWindow: 120 })).toBe(5);
    expect(at(HOUR, { lastClaimAt: 0, inFlight: 124 })).toBe(1);
    expect(at(HOUR, { lastClaimAt: 0, claimedInWindow: 130 })).toBe(0);
  });

  it('never lets a sliding window or an hour hold more than allowed, whatever the drain times', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3000 }),
        fc.array(fc.integer({ min: 0, max: 120_000 }), { minLength: 1, maxLength: 400 }),
        (cap, gaps) => {
          const w = pushDrainWindow(cap, 10 * TICK);
          const claims: number[] = [];
          let now = 0;
          for (const gap of gaps) {
            now += gap;
            const allowed = pushDrainAllowance({
              window: w,
              tickMs: TICK,
              claimedInWindow: claims.filter((c) => c > now - w.windowMs).length,
              inFlight: 0,
              lastClaimAt: claims.at(-1) ?? null,
              now,
            });
            for (let i = 0; i < allowed; i++) claims.push(now);
          }
          for (const c of claims) {
            expect(claims.filter((o) => o > c - w.windowMs && o <= c).length).toBeLessThanOrEqual(
              w.perWindow,
            );
            expect(claims.filter((o) => o >= c && o < c + HOUR).length).toBeLessThanOrEqual(cap);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
