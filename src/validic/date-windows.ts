/**
 * Record and connection queries take at most 30 days (`start_date`..`end_date`, both inclusive UTC
 * dates; one provider guide says 31, so 30 is the safe reading). A range is cut into consecutive
 * windows that cover it exactly once.
 *
 * Which date of a record the platform's filter matches is not pinned down: the UTC date of its start
 * time, or the user's local date. A user's offset lies within −12 h..+14 h, so the local date of a
 * record is its UTC date or the day before or after: `planRecordWindows` asks one more day at each
 * edge of a range, and a record whose UTC date lies in the range is fetched under either reading
 * (the loader makes the overlap a no-op).
 */
import { UsageError } from '../errors/index.ts';
import { MAX_REQUEST_WINDOW_DAYS } from './platform-limits.ts';

export interface DateWindow {
  /** YYYY-MM-DD, inclusive. */
  startDate: string;
  /** YYYY-MM-DD, inclusive. */
  endDate: string;
}

const DAY_MS = 86_400_000;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Parses YYYY-MM-DD as a UTC day number (days since the epoch); throws a UsageError when invalid. */
export function parseUtcDate(text: string): number {
  const m = DATE_RE.exec(text);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
  // Date.UTC rolls 2026-02-31 over to March: compare back to catch impossible dates.
  if (!m || Number.isNaN(ms) || formatUtcDate(ms / DAY_MS) !== text) {
    throw new UsageError(`invalid date "${text}"`, 'write dates as YYYY-MM-DD, e.g. 2026-01-31');
  }
  return ms / DAY_MS;
}

export function formatUtcDate(dayNumber: number): string {
  return new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);
}

/** Number of days in an inclusive window. */
export function windowDays(window: DateWindow): number {
  return parseUtcDate(window.endDate) - parseUtcDate(window.startDate) + 1;
}

/** Consecutive windows of at most `maxDays` days covering `from`..`to` (inclusive) exactly once. */
export function planDateWindows(from: string, to: string, maxDays = MAX_REQUEST_WINDOW_DAYS): DateWindow[] {
  if (!Number.isInteger(maxDays) || maxDays < 1)
    throw new RangeError(`maxDays must be a positive integer, got ${maxDays}`);
  const first = parseUtcDate(from);
  const last = parseUtcDate(to);
  if (last < first)
    throw new UsageError(`the range ends (${to}) before it starts (${from})`, 'swap --from and --to');
  const windows: DateWindow[] = [];
  for (let start = first; start <= last; start += maxDays) {
    const end = Math.min(last, start + maxDays - 1);
    windows.push({ startDate: formatUtcDate(start), endDate: formatUtcDate(end) });
  }
  return windows;
}

/** Days added at each edge of a record range so both readings of the date filter cover it. */
export const EDGE_DAYS = 1;

/** `from`..`to` widened by EDGE_DAYS at each edge. */
export function widenRecordRange(from: string, to: string): { from: string; to: string } {
  return {
    from: formatUtcDate(parseUtcDate(from) - EDGE_DAYS),
    to: formatUtcDate(parseUtcDate(to) + EDGE_DAYS),
  };
}

/**
 * Windows (each at most `maxDays`) for the records of `from`..`to`, robust to both readings of the date
 * filter: every record whose UTC start date lies in the range is in one of them, whether the platform
 * matches UTC dates or the user's local dates. Use for every backfill and recent record range.
 */
export function planRecordWindows(from: string, to: string, maxDays = MAX_REQUEST_WINDOW_DAYS): DateWindow[] {
  if (parseUtcDate(to) < parseUtcDate(from))
    throw new UsageError(`the range ends (${to}) before it starts (${from})`, 'swap --from and --to');
  const wide = widenRecordRange(from, to);
  return planDateWindows(wide.from, wide.to, maxDays);
}
