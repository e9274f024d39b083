/** Date helpers shared by the sandbox routes: the platform's timestamp and date formats. */
import type { Clock } from '../time/clock.ts';

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
