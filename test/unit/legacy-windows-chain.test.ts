/**
 * The legacy window chain and cursor rules: chaining windows one by one (legacy.latest) yields exactly
 * the windows planLegacyWindows plans, and the cursor only ever extends the covered range.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextLegacyWindow } from '../../jobs/legacy-latest.ts';
import { nextLegacyCursor, planLegacyWindows } from '../../src/legacy/legacy-windows.ts';
import { legacyLatestCursor } from '../../src/warehouse/cursors.ts';

const HOUR = 3_600_000;
const at = (iso: string) => new Date(iso);

describe('nextLegacyWindow', () => {
  it('walks the same windows as planLegacyWindows', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 72 }),
        fc.integer({ min: 0, max: 59 }),
        // The span as a number of window steps (plus a remainder), so a case never plans more than a
        // few hundred windows: a 1-hour window with 59 minutes of overlap steps by one minute.
        fc.integer({ min: 0, max: 300 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (windowHours, overlapMinutes, steps, remainder) => {
          const settings = { windowMs: windowHours * HOUR, overlapMs: overlapMinutes * 60_000 };
          const step = settings.windowMs - settings.overlapMs;
          const from = at('2026-01-01T00:00:00Z');
          const until = new Date(from.getTime() + Math.round((steps + remainder) * step));
          const planned = planLegacyWindows(from, until, settings);
          const chained = [];
          let window = planned[0];
          while (window) {
            chained.push(window);
            window = nextLegacyWindow(window, until, settings);
          }
          expect(chained).toEqual(planned);
        },
      ),
    );
  });
});

describe('nextLegacyCursor', () => {
  const window = (start: string, end: string) => ({ start: at(start), end: at(end) });
  const later = at('2030-01-01T00:00:00Z');

  it('starts the cursor at the end of the first window loaded', () => {
    expect(
      nextLegacyCursor(undefined, window('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'), later),
    ).toEqual({
      start: '2026-01-01T00:00:00.000Z',
      end: '2026-01-02T00:00:00.000Z',
      at: later.toISOString(),
    });
  });

  it('extends only with a contiguous (overlapping) window that ends later', () => {
    const current = { start: 'x', end: '2026-01-02T00:00:00.000Z', at: 'x' };
    const overlapping = window('2026-01-01T23:50:00Z', '2026-01-03T00:00:00Z');
    expect(nextLegacyCursor(current, overlapping, later)?.end).toBe('2026-01-03T00:00:00.000Z');
    // A gap before the window: the cursor must not jump over unloaded data.
    expect(nextLegacyCursor(current, window('2026-01-05T00:00:00Z', '2026-01-06T00:00:00Z'), later)).toBe(
      undefined,
    );
    // An old range (backfill) never drags the cursor back.
    expect(nextLegacyCursor(current, window('2025-12-01T00:00:00Z', '2025-12-02T00:00:00Z'), later)).toBe(
      undefined,
    );
  });

  it('covers a window reaching into the future only up to when it was fetched', () => {
    const fetchedAt = at('2026-01-01T12:00:00Z');
    expect(
      nextLegacyCursor(undefined, window('2026-01-01T00:00:00Z', '2026-01-03T00:00:00Z'), fetchedAt)?.end,
    ).toBe('2026-01-01T12:00:00.000Z');
    expect(
      nextLegacyCursor(undefined, window('2026-01-02T00:00:00Z', '2026-01-03T00:00:00Z'), fetchedAt),
    ).toBe(undefined);
  });

  it('reads back only values of its own shape', () => {
    const cursor = legacyLatestCursor('fitness');
    expect(cursor.key).toBe('legacy:latest:fitness');
    expect(cursor.parse({ end: '2026-01-02T00:00:00.000Z' })).toEqual({
      end: '2026-01-02T00:00:00.000Z',
      start: '2026-01-02T00:00:00.000Z',
      at: '2026-01-02T00:00:00.000Z',
    });
    expect(cursor.parse({ end: '2026-01-02T00:00:00.000Z', start: 7 })?.start).toBe(
      '2026-01-02T00:00:00.000Z',
    );
    expect(cursor.parse({ end: 'yesterday' })).toBeUndefined();
    expect(cursor.parse(null)).toBeUndefined();
    expect(cursor.parse('2026-01-02')).toBeUndefined();
  });
});
