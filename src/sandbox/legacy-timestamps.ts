/**
 * Legacy timestamp rules: `timestamp` must be ISO 8601 in UTC. On POST only, a timestamp carrying an
 * offset with no `utc_offset` is converted to UTC and its offset fills `utc_offset`.
 */
import { formatOffset, isoSeconds } from './time.ts';

const ISO = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?$/;
const OFFSET = /^[+-]\d{2}:\d{2}$/;

export type TimestampResult =
  | { ok: true; timestamp: string; utc_offset: string }
  | { ok: false; message: string };

function offsetSeconds(zone: string): number {
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 3600 + Number(digits.slice(2, 4)) * 60);
}

export function normalizeTimestamp(
  timestamp: unknown,
  utcOffset: unknown,
  mode: 'create' | 'update',
  defaultOffset: string,
): TimestampResult {
  if (typeof timestamp !== 'string') return { ok: false, message: 'timestamp is required (ISO 8601, UTC)' };
  const m = ISO.exec(timestamp);
  const ms = Date.parse(timestamp);
  if (!m || Number.isNaN(ms)) return { ok: false, message: 'timestamp must be ISO 8601 in UTC' };
  if (
    utcOffset !== undefined &&
    utcOffset !== null &&
    (typeof utcOffset !== 'string' || !OFFSET.test(utcOffset))
  ) {
    return { ok: false, message: 'utc_offset must have the form +hh:mm or -hh:mm' };
  }
  const zone = m[2];
  if (zone === undefined) return { ok: false, message: 'timestamp must be in UTC (no time zone given)' };
  const seconds = zone === 'Z' ? 0 : offsetSeconds(zone);
  if (seconds !== 0) {
    if (mode === 'update' || (utcOffset !== undefined && utcOffset !== null)) {
      return { ok: false, message: 'timestamp must be in UTC; give the offset in utc_offset' };
    }
    return { ok: true, timestamp: isoSeconds(ms), utc_offset: formatOffset(seconds) };
  }
  return {
    ok: true,
    timestamp: isoSeconds(ms),
    utc_offset: typeof utcOffset === 'string' ? utcOffset : defaultOffset,
  };
}

/** Accepted forms for list dates: YYYY-MM-DDThh:mm:ss.ms-hh:mm, YYYY-MM-DDThh:mm:ssZ (and a bare date). */
export function parseListDate(value: string | null, fallback: number): number | null {
  if (value === null || value === '') return fallback;
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)) return null;
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value.replace(' ', 'T'));
  return Number.isNaN(ms) ? null : ms;
}
