/**
 * The v1 API's windows: how a range of `last_updated` is cut, the settings that size them, and the
 * cursor that remembers the end of the last fully loaded window.
 */

import type { Config } from '../config/schema.ts';
import type { PlatformClock } from '../time/platform-clock.ts';
import type { LegacyCursorValue } from '../warehouse/cursors.ts';

/**
 * The legacy `latest` endpoints filter by `last_updated`, and a device may sync late, so windows are
 * polled consecutively with a small overlap (records updated right at a boundary, or stamped a little
 * in the past, are caught by the next window; the loader's dedupe removes the overlap).
 */
export interface InstantWindow {
  start: Date;
  end: Date;
}

export interface LegacyWindowOptions {
  /** Length of one window, ms (default one day). */
  windowMs?: number;
  /** Overlap of a window with the previous one, ms (default 5 minutes). */
  overlapMs?: number;
}

/**
 * Windows from `from` to `to`: the first starts at `from`, each next one starts `overlapMs` before the
 * previous end, the last ends exactly at `to`. Empty when `to` ≤ `from`.
 */
export function planLegacyWindows(
  from: Date | string,
  to: Date | string,
  options: LegacyWindowOptions = {},
): InstantWindow[] {
  const windowMs = options.windowMs ?? 86_400_000;
  const overlapMs = options.overlapMs ?? 300_000;
  if (!(overlapMs >= 0)) throw new RangeError(`overlapMs must be ≥ 0, got ${overlapMs}`);
  if (!(windowMs > overlapMs)) {
    throw new RangeError(
      `windowMs (${windowMs}) must be longer than overlapMs (${overlapMs}) to make progress`,
    );
  }
  const start = toMs(from);
  const end = toMs(to);
  const windows: InstantWindow[] = [];
  let cursor = start;
  while (cursor < end) {
    const windowEnd = Math.min(cursor + windowMs, end);
    windows.push({ start: new Date(cursor), end: new Date(windowEnd) });
    if (windowEnd >= end) break;
    cursor = windowEnd - overlapMs;
  }
  return windows;
}

function toMs(value: Date | string): number {
  const ms = typeof value === 'string' ? Date.parse(value) : value.getTime();
  if (Number.isNaN(ms)) throw new RangeError(`invalid instant ${String(value)}`);
  return ms;
}

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

/**
 * The cursor value to write after loading `window`, or undefined when the cursor must stay. `fetchedAt`
 * is the platform's time (never the worker's: a worker clock ahead would carry the cursor past records
 * the platform has yet to stamp) before the window's first request: the endpoint cannot have returned
 * records updated after it, so a window reaching into the future covers only up to then (a backfill
 * `--to` tomorrow must not make the scheduled sync skip tomorrow).
 */
export function nextLegacyCursor(
  current: LegacyCursorValue | undefined,
  window: InstantWindow,
  fetchedAt: Date,
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

/** Window length and overlap of legacy `latest` polling, from `sync.legacyWindowHours` / `legacyOverlapMinutes`. */
export interface LegacyWindowSettings extends Required<LegacyWindowOptions> {}

export function legacyWindowSettings(config: Config): LegacyWindowSettings {
  const windowMs = config.sync.legacyWindowHours * 3_600_000;
  // An overlap as long as the window would never make progress: keep it strictly shorter.
  const overlapMs = Math.min(config.sync.legacyOverlapMinutes * 60_000, windowMs - 60_000);
  return { windowMs, overlapMs: Math.max(0, overlapMs) };
}

/**
 * The platform's now for legacy windows: the worker's clock may be minutes off the platform's, and the
 * `last_updated` a window filters on is the platform's. A process that has heard nothing from the
 * platform yet asks it once (`hear`, a cheap request whose answer's Date sets the clock) rather than
 * trust its own clock.
 *
 * - `end`: where windows planned now end: the platform's now at the latest it can be (whole seconds, up),
 *   so a window leaves out nothing the platform holds already;
 * - `coveredUntil`: how far a listing asked now can move the cursor: the platform's now at the earliest,
 *   less the second in progress (`last_updated` carries whole seconds: a record stamped later in that
 *   second still reads as it).
 */
export async function platformNowForWindows(
  clock: Pick<PlatformClock, 'earliestNow' | 'latestNow' | 'reading'>,
  hear: () => Promise<unknown>,
): Promise<{ end: Date; coveredUntil: Date }> {
  if (clock.reading().observedAt === undefined) await hear();
  return {
    end: new Date(Math.ceil(clock.latestNow() / 1000) * 1000),
    coveredUntil: new Date(Math.floor(clock.earliestNow() / 1000) * 1000 - 1000),
  };
}
