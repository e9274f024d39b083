/**
 * How the legacy latest cursor `legacy:latest:<object>` moves (its kind:
 * src/warehouse/cursors.ts): the end of the last fully loaded `last_updated` window
 * of that object. It is written by `applyBatch` together with the window's last page, so it never runs
 * ahead of committed data.
 *
 * It only ever EXTENDS the covered range: a window moves it when the window starts at or before the
 * cursor (contiguous with what is covered) and ends after it. A backfill of an old range therefore never
 * drags the cursor back, and a window that is not contiguous (a gap before it) never jumps it forward
 * past data nobody loaded.
 */
import type { LegacyCursorValue } from '../warehouse/cursors.ts';
import type { InstantWindow } from './legacy-windows.ts';

/**
 * The cursor value to write after loading `window`, or undefined when the cursor must stay. `fetchedAt`
 * is taken before the window's first request: the endpoint cannot have returned records updated after
 * it, so a window reaching into the future covers only up to then (a backfill `--to` tomorrow must not
 * make the scheduled sync skip tomorrow).
 */
export function nextLegacyCursor(
  current: LegacyCursorValue | undefined,
  window: InstantWindow,
  fetchedAt: Date = new Date(),
): LegacyCursorValue | undefined {
  const end = Math.min(window.end.getTime(), fetchedAt.getTime());
  if (end <= window.start.getTime()) return undefined;
  const value = {
    end: new Date(end).toISOString(),
    start: window.start.toISOString(),
    at: fetchedAt.toISOString(),
  };
  if (!current) return value;
  const covered = Date.parse(current.end);
  if (window.start.getTime() <= covered && end > covered) return value;
  return undefined;
}
