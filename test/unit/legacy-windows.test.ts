import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planLegacyWindows } from '../../src/legacy/legacy-windows.ts';

describe('planLegacyWindows', () => {
  it('plans consecutive windows overlapping by overlapMs, the last ending at `to`', () => {
    const windows = planLegacyWindows('2026-01-01T00:00:00Z', '2026-01-03T12:00:00Z', {
      windowMs: 86_400_000,
      overlapMs: 300_000,
    });
    expect(windows.map((w) => [w.start.toISOString(), w.end.toISOString()])).toEqual([
      ['2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z'],
      ['2026-01-01T23:55:00.000Z', '2026-01-02T23:55:00.000Z'],
      ['2026-01-02T23:50:00.000Z', '2026-01-03T12:00:00.000Z'],
    ]);
    expect(planLegacyWindows('2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')).toEqual([]);
    expect(() =>
      planLegacyWindows('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', { windowMs: 10, overlapMs: 10 }),
    ).toThrow(RangeError);
  });

  it('covers [from, to] without gaps and always progresses (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 * 86_400_000 }),
        fc.integer({ min: 600_000, max: 86_400_000 }),
        fc.integer({ min: 0, max: 600_000 }),
        (length, windowExtra, overlapMs) => {
          const windowMs = overlapMs + windowExtra;
          const from = Date.UTC(2026, 0, 1);
          const windows = planLegacyWindows(new Date(from), new Date(from + length), { windowMs, overlapMs });
          if (length === 0) {
            expect(windows).toEqual([]);
            return;
          }
          expect(windows[0]!.start.getTime()).toBe(from);
          expect(windows.at(-1)!.end.getTime()).toBe(from + length);
          for (let i = 0; i < windows.length; i++) {
            const w = windows[i]!;
            expect(w.end.getTime()).toBeGreaterThan(w.start.getTime());
            expect(w.end.getTime() - w.start.getTime()).toBeLessThanOrEqual(windowMs);
            if (i > 0) {
              const prev = windows[i - 1]!;
              // Overlap exactly overlapMs (no gap), and strictly later than the previous window.
              expect(w.start.getTime()).toBe(prev.end.getTime() - overlapMs);
              expect(w.end.getTime()).toBeGreaterThan(prev.end.getTime());
            }
          }
        },
      ),
    );
  });
});
