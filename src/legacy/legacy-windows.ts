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
