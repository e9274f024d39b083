/**
 * The platform's documented numbers and names, in one place (docs/platform.md): its limits, the v2
 * resource names, the v1 object names, what may go in a URL path segment, and the date windows a request
 * may span. Code that plans windows, connections, replays or the request budget takes them from here,
 * never as a bare literal.
 */

import type { z } from 'zod';
import { UsageError } from '../errors/index.ts';

/**
 * Record and connection queries: at most this many days from `start_date` to `end_date`, both inclusive
 * (the spec says 30, one provider guide 31: 30 is the safe reading). More gives a 400 with little detail.
 */
export const MAX_REQUEST_WINDOW_DAYS = 30;

/** Streams per customer; creating a sixth is refused (422). */
export const MAX_STREAMS_PER_CUSTOMER = 5;

/** Concurrent SSE connections to one stream; a 4th is refused (422). */
export const MAX_STREAM_CONNECTIONS = 3;

/** How long the platform keeps a stream's checkpoint after a disconnect: reconnecting within it resumes. */
export const STREAM_CHECKPOINT_RETENTION_DAYS = 7;

/**
 * How far back the platform serves data: up to one year is retrievable through the API. A request for
 * older data costs a request and finds nothing.
 */
export const RETRIEVABLE_HISTORY_DAYS = 365;

/** How far back `GET /replay` serves (`date` at most this many days ago). */
export const REPLAY_RETENTION_DAYS = 30;

/** The platform keeps events (connection events, replay) captured on or after this date only. */
export const CONNECTION_EVENTS_SINCE = '2025-07-01';

/** The documented default request rate per token; a contract may grant another (`requestsPerHour`). */
export const DEFAULT_REQUESTS_PER_HOUR = 2_000;

/** An open stream connection gets a `poke` frame this often when nothing else flows. */
export const STREAM_POKE_INTERVAL_MS = 5_000;

/**
 * The v2 record resources. Config and CLI use the path names (`measurements, nutrition, intraday,
 * summaries, workouts, sleep, cgm`); records carry singular types (`measurement`, `summary`, `workout`;
 * the spec also states `measurements`), and stream/replay filters use the record types.
 */
export const V2_RESOURCES = [
  'measurements',
  'nutrition',
  'intraday',
  'summaries',
  'workouts',
  'sleep',
  'cgm',
] as const;
export type V2Resource = (typeof V2_RESOURCES)[number];

const ALIASES: Record<string, V2Resource> = {
  measurement: 'measurements',
  measurements: 'measurements',
  nutrition: 'nutrition',
  intraday: 'intraday',
  summary: 'summaries',
  summaries: 'summaries',
  workout: 'workouts',
  workouts: 'workouts',
  sleep: 'sleep',
  cgm: 'cgm',
};

const RECORD_TYPES: Record<V2Resource, string> = {
  measurements: 'measurement',
  nutrition: 'nutrition',
  intraday: 'intraday',
  summaries: 'summary',
  workouts: 'workout',
  sleep: 'sleep',
  cgm: 'cgm',
};

/** Accepts path names and record types, case-insensitive; throws a UsageError naming the valid ones. */
export function toV2Resource(name: string): V2Resource {
  const resource = ALIASES[name.trim().toLowerCase()];
  if (!resource) {
    throw new UsageError(`unknown resource "${name}"`, `use one or more of: ${V2_RESOURCES.join(', ')}`);
  }
  return resource;
}

/** Path segment under `/users/{uid}/`. */
export function resourcePath(resource: V2Resource): string {
  return resource;
}

/** Record `type` of a resource (also the name stream `resource_filter` and replay `resources` use). */
export function recordTypeOf(resource: V2Resource): string {
  return RECORD_TYPES[resource];
}

/**
 * What a stream's `resource_filter` (and replay's `resources`) may name: the record types the platform
 * streams, plus `connection` for connection events (the stream delivers them too).
 */
export const STREAM_RECORD_TYPES = [...V2_RESOURCES.map((r) => RECORD_TYPES[r]), 'connection'] as const;

/**
 * A stream filter entry → the record type the platform expects (`measurements` → `measurement`,
 * `summaries` → `summary`, `connections` → `connection`), or null when the platform streams no such type.
 */
export function toStreamRecordType(name: string): string | null {
  const n = name.trim().toLowerCase();
  if (n === 'connection' || n === 'connections') return 'connection';
  const resource = ALIASES[n];
  return resource ? RECORD_TYPES[resource] : null;
}

/** The legacy (v1) standard objects; `tobacco_cessation` is known to older clients only. */
export const LEGACY_OBJECTS = [
  'fitness',
  'routine',
  'nutrition',
  'sleep',
  'weight',
  'diabetes',
  'biometrics',
  'tobacco_cessation',
] as const;
export type LegacyObject = (typeof LEGACY_OBJECTS)[number];

export function toLegacyObject(name: string): LegacyObject {
  const object = name.trim().toLowerCase();
  if (!(LEGACY_OBJECTS as readonly string[]).includes(object)) {
    throw new UsageError(
      `unknown legacy object "${name}"`,
      `use one or more of: ${LEGACY_OBJECTS.join(', ')}`,
    );
  }
  return object as LegacyObject;
}

/**
 * Ids from the platform (user `uid`, legacy user and record `_id`, stream ids) and organization ids
 * from the config go into URL paths. `buildUrl` percent-encodes every segment, so `/`, `?`, `#` and
 * `%` (hence `%2e%2e`) stay inside their segment; what encoding cannot neutralize is a segment that is
 * empty, `.` or `..`: the URL parser removes or resolves those ("dot-segments"), so an id of `..` would
 * address the parent endpoint. Control characters and absurd lengths are refused too: no real id holds
 * them, and they would only reach logs and error messages.
 */

/** Longer than any real id; bounds what an id can put in a URL, a log line or a job id. */
export const MAX_PATH_ID_LENGTH = 1024;

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `value` cannot be one URL path segment, or undefined when it can. */
export function pathSegmentProblem(value: string): string | undefined {
  if (value === '') return 'is empty';
  if (value === '.' || value === '..') return `is the dot-segment "${value}"`;
  if (CONTROL.test(value)) return 'holds control characters';
  if (value.length > MAX_PATH_ID_LENGTH) return `is longer than ${MAX_PATH_ID_LENGTH} characters`;
  return undefined;
}

/** For zod schemas of ids that go into paths (`.superRefine(refinePathSegment)`): the same check. */
export function refinePathSegment(value: string, ctx: z.RefinementCtx): void {
  const problem = pathSegmentProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: `cannot be used in a URL path: it ${problem}` });
}

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
