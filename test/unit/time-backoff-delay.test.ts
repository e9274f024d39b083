/** The one back-off formula: exponential ceiling, jitter, floor, cap, and `Retry-After` over it. */
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/time/backoff-delay.ts';

describe('backoffDelay', () => {
  const half = () => 0.5;
  it('draws a full-jitter wait under an exponential ceiling, within the cap', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, { baseMs: 1000, capMs: 8000 }, half))).toEqual([
      500, 1000, 2000, 4000, 4000,
    ]);
    expect(backoffDelay(3, { baseMs: 1000, capMs: 8000 }, () => 0)).toBe(0);
  });
  it('without jitter is the plain exponential ceiling (BullMQ exponential)', () => {
    expect([1, 2, 3, 6].map((n) => backoffDelay(n, { baseMs: 2000, capMs: 30_000, jitter: 0 }))).toEqual([
      2000, 4000, 8000, 30_000,
    ]);
  });
  it('keeps a floor, with the jittered span on top and the whole within the cap', () => {
    const options = { baseMs: 1000, capMs: 15_000, minMs: 2000, factor: 2 };
    expect(backoffDelay(1, options, half)).toBe(2500);
    expect(backoffDelay(10, options, () => 0.999_999)).toBeLessThanOrEqual(15_000);
    expect(backoffDelay(10, options, () => 0)).toBe(2000);
  });
  it('honours Retry-After over the formula', () => {
    expect(backoffDelay(1, { baseMs: 1000, capMs: 8000 }, half, 42_000)).toBe(42_000);
  });
});
