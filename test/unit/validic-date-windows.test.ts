import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.ts';
import { formatUtcDate, parseUtcDate, planDateWindows, windowDays } from '../../src/validic/date-windows.ts';

describe('planDateWindows', () => {
  it('cuts a range into 30-day inclusive windows', () => {
    expect(planDateWindows('2026-01-01', '2026-03-01')).toEqual([
      { startDate: '2026-01-01', endDate: '2026-01-30' },
      { startDate: '2026-01-31', endDate: '2026-03-01' },
    ]);
    expect(planDateWindows('2026-02-10', '2026-02-10')).toEqual([
      { startDate: '2026-02-10', endDate: '2026-02-10' },
    ]);
    expect(planDateWindows('2024-02-28', '2024-03-01', 2)).toEqual([
      { startDate: '2024-02-28', endDate: '2024-02-29' },
      { startDate: '2024-03-01', endDate: '2024-03-01' },
    ]);
  });

  it('rejects impossible or reversed dates with a UsageError', () => {
    expect(() => planDateWindows('2026-02-30', '2026-03-01')).toThrow(UsageError);
    expect(() => planDateWindows('2026-03-01', '2026-02-01')).toThrow(UsageError);
    expect(() => planDateWindows('26-1-1', '2026-02-01')).toThrow(UsageError);
  });

  it('covers the range exactly once, in order, each window at most maxDays (property)', () => {
    const day = fc.integer({ min: parseUtcDate('2000-01-01'), max: parseUtcDate('2040-12-31') });
    fc.assert(
      fc.property(
        day,
        fc.integer({ min: 0, max: 800 }),
        fc.integer({ min: 1, max: 45 }),
        (start, length, maxDays) => {
          const from = formatUtcDate(start);
          const to = formatUtcDate(start + length);
          const windows = planDateWindows(from, to, maxDays);
          expect(windows[0]!.startDate).toBe(from);
          expect(windows[windows.length - 1]!.endDate).toBe(to);
          let expectedStart = start;
          for (const w of windows) {
            // Contiguous: no gap, no overlap, in order.
            expect(parseUtcDate(w.startDate)).toBe(expectedStart);
            const days = windowDays(w);
            expect(days).toBeGreaterThanOrEqual(1);
            expect(days).toBeLessThanOrEqual(maxDays);
            expectedStart = parseUtcDate(w.endDate) + 1;
          }
          expect(expectedStart).toBe(start + length + 1);
          // Minimal: only the last window may be shorter than maxDays.
          expect(windows.slice(0, -1).every((w) => windowDays(w) === maxDays)).toBe(true);
        },
      ),
    );
  });
});
