/**
 * How to fill a gap in the main stream, as a pure function of "now" and the gap start T
 * (PLATFORM-FACTS.md, "Replay"): replay from T's UTC date until an event with `created_at` ≥ T arrives,
 * then reconnect the main stream, which resumes from its own server-side checkpoint.
 *
 * Two limits bend that plan:
 * - Replay serves only `replayMaxDays` back: replay from the earliest date it serves, and report
 *   [T, that date) as a gap for a REST backfill. The earliest date is taken one day inside the limit,
 *   because "30 days back" may be counted inclusively or not by different servers.
 * - The platform keeps a stream's checkpoint only `checkpointRetentionDays` after a disconnect: past
 *   that, the stream will not resume at T, so the replay must run up to the present (catch-up at
 *   "now") instead of up to T.
 */
import type { StreamGap } from '../warehouse/cursors.ts';

const DAY_MS = 86_400_000;

export interface GapFillPlan {
  /** `YYYY-MM-DD` (UTC) for `/replay?date=`. */
  replayDate: string;
  /** The replay has caught up at the first event with `created_at` ≥ this time (ms). */
  catchUpAtMs: number;
  /** Set when the gap is longer than replay or the stream checkpoint can cover. */
  tooLong: StreamGap | undefined;
}

export interface GapLimits {
  replayMaxDays: number;
  checkpointRetentionDays: number;
}

export function planGapFill(nowMs: number, gapStartMs: number, limits: GapLimits): GapFillPlan {
  const gapDate = utcDate(gapStartMs);
  const earliestDate = utcDate(nowMs - Math.max(0, limits.replayMaxDays - 1) * DAY_MS);
  const checkpointExpired = nowMs - gapStartMs > limits.checkpointRetentionDays * DAY_MS;
  const catchUpAtMs = checkpointExpired ? nowMs : gapStartMs;
  if (gapDate < earliestDate) {
    return {
      replayDate: earliestDate,
      catchUpAtMs,
      tooLong: {
        from: new Date(gapStartMs).toISOString(),
        to: `${earliestDate}T00:00:00.000Z`,
        reason: 'beyond-replay',
      },
    };
  }
  return {
    replayDate: gapDate,
    catchUpAtMs,
    tooLong: checkpointExpired
      ? {
          from: new Date(gapStartMs).toISOString(),
          to: new Date(nowMs).toISOString(),
          reason: 'stream-checkpoint-expired',
        }
      : undefined,
  };
}

/** `YYYY-MM-DD` of a time, in UTC. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
