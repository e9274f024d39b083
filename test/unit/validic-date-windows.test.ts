import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors/index.ts';
import {
  formatUtcDate,
  parseUtcDate,
  planDateWindows,
  planRecordWindows,
  windowDays,
} from '../../src/validic/platform-limits.ts';

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

describe('planRecordWindows (both readings of the date filter)', () => {
  it('asks one more day at each edge, in windows of at most 30 days', () => {
    expect(planRecordWindows('2026-03-01', '2026-03-10')).toEqual([
      { startDate: '2026-02-28', endDate: '2026-03-11' },
    ]);
    expect(planRecordWindows('2026-01-02', '2026-01-29')).toEqual([
      { startDate: '2026-01-01', endDate: '2026-01-30' },
    ]);
    expect(() => planRecordWindows('2026-03-02', '2026-03-01')).toThrow(UsageError);
  });

  it('covers every record of the range whether the platform windows by UTC date or by local date', () => {
    const DAY = 86_400_000;
    const day = fc.integer({ min: parseUtcDate('2020-01-01'), max: parseUtcDate('2030-12-31') });
    fc.assert(
      fc.property(
        day,
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 0, max: 400 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        // A user's offset: −12 h (Baker Island) … +14 h (Kiritimati), in minutes.
        fc.integer({ min: -12 * 60, max: 14 * 60 }),
        (first, length, at, fraction, offsetMinutes) => {
          const from = formatUtcDate(first);
          const to = formatUtcDate(first + length);
          const windows = planRecordWindows(from, to);
          for (const w of windows) expect(windowDays(w)).toBeLessThanOrEqual(30);
          // A record starting at any instant of the range's UTC days…
          const startMs = (first + (at % (length + 1)) + fraction * 0.999) * DAY;
          const utcDate = new Date(startMs).toISOString().slice(0, 10);
          const localDate = new Date(startMs + offsetMinutes * 60_000).toISOString().slice(0, 10);
          // …is in some window under either reading.
          for (const date of [utcDate, localDate]) {
            expect(windows.some((w) => w.startDate <= date && date <= w.endDate)).toBe(true);
          }
        },
      ),
    );
  });

  it('would lose edge days under the local reading without the widening (what the widening is for)', () => {
    // A user at UTC+14 at 11:00 UTC on the last day: local date is the day after.
    const local = new Date(Date.parse('2026-03-10T11:00:00Z') + 14 * 3_600_000).toISOString().slice(0, 10);
    expect(planDateWindows('2026-03-01', '2026-03-10').some((w) => w.endDate >= local)).toBe(false);
    expect(planRecordWindows('2026-03-01', '2026-03-10').some((w) => w.endDate >= local)).toBe(true);
  });
});
