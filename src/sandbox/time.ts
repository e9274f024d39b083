/**
 * The sandbox's time: its own clock (advanced and set by the control API, never sleeping), the platform's
 * date and instant formats, and the v1 API's timestamps in every form it accepts.
 */
import type { Clock } from '../time/clock.ts';

/** Date helpers shared by the sandbox routes: the platform's timestamp and date formats. */
export const DAY_MS = 86_400_000;

/** YYYY-MM-DDThh:mm:ssZ (record start/end times, connection event times). */
export function isoSeconds(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** YYYY-MM-DDThh:mm:ss.sssZ (record `created_at`, which the samples show with milliseconds). */
export function isoMillis(ms: number): string {
  return new Date(ms).toISOString();
}

/** YYYY-MM-DD of the UTC day containing `ms`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** Strict YYYY-MM-DD that names a real calendar day; returns its UTC midnight in ms or null. */
export function parseDay(value: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return null;
  const ms = Date.parse(`${value}T00:00:00Z`);
  if (Number.isNaN(ms) || utcDay(ms) !== value) return null;
  return ms;
}

/** +hh:mm / -hh:mm for an offset in seconds (legacy `utc_offset`). */
export function formatOffset(seconds: number): string {
  const sign = seconds < 0 ? '-' : '+';
  const abs = Math.abs(seconds);
  const hh = String(Math.floor(abs / 3600)).padStart(2, '0');
  const mm = String(Math.floor((abs % 3600) / 60)).padStart(2, '0');
  return `${sign}${hh}:${mm}`;
}

/**
 * The sandbox clock: an anchor that advances with real time, plus a manual offset that tests move
 * (PIN expiry, checkpoint retention, request-budget windows) without waiting. It reads time like the
 * one `Clock` of src/time/clock.ts; it never sleeps (the sandbox answers at once), so it has no `sleep`.
 */
export interface SandboxClock extends Pick<Clock, 'now'> {
  advance(ms: number): void;
  set(ms: number): void;
}

export function createClock(anchor: number): SandboxClock {
  const startedAt = Date.now();
  let offset = 0;
  return {
    now: () => anchor + (Date.now() - startedAt) + offset,
    advance: (ms) => {
      offset += ms;
    },
    set: (ms) => {
      offset = ms - anchor - (Date.now() - startedAt);
    },
  };
}

/**
 * Legacy timestamp rules: `timestamp` must be ISO 8601 in UTC. On POST only, a timestamp carrying an
 * offset with no `utc_offset` is converted to UTC and its offset fills `utc_offset`.
 */
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
