/**
 * Who delivers a gap again, as pure functions of platform times (src/stream/README.md, "Gaps"): the
 * reconciliation stream's next pass when the gap lies within what that pass re-delivers without a break;
 * else the provider's replay from the gap's date (one request, up to 30 days back, events from
 * 2025-07-01 on); else, for what is older than the replay reaches, a REST backfill of the gap's days.
 */

import { CONNECTION_EVENTS_SINCE, REPLAY_RETENTION_DAYS } from '../validic/platform-limits.ts';
import type { GapHandledBy } from '../warehouse/stream-bookkeeping.ts';
import { utcDate } from './consumer-cursor.ts';

const DAY_MS = 86_400_000;

/**
 * The earliest date the replay serves at platform time `nowMs`: one day inside its 30 days (servers may
 * count them inclusively or not), and never before the first day it keeps events of.
 */
export function replayEarliestDate(nowMs: number): string {
  const inside = utcDate(nowMs - (REPLAY_RETENTION_DAYS - 1) * DAY_MS);
  // biome-ignore lint/complexity/useMathMinMax: ISO date strings compare as text, Math.max would not.
  return inside < CONNECTION_EVENTS_SINCE ? CONNECTION_EVENTS_SINCE : inside;
}

export interface GapSpan {
  from: string;
  to: string;
}

/**
 * Splits a gap at the replay's reach: the part before the earliest date the replay serves (REST's, by
 * whole days), and the rest. Either may be absent.
 */
export function splitAtReplayReach<T extends GapSpan>(
  gap: T,
  nowMs: number,
): { beyondReplay?: T; withinReplay?: T } {
  const earliest = `${replayEarliestDate(nowMs)}T00:00:00.000Z`;
  if (Date.parse(gap.from) >= Date.parse(earliest)) return { withinReplay: gap };
  if (Date.parse(gap.to) <= Date.parse(earliest)) return { beyondReplay: gap };
  return { beyondReplay: { ...gap, to: earliest }, withinReplay: { ...gap, from: earliest } };
}

/**
 * Who fills a gap that lies within the replay's reach: the reconciliation stream when its next pass
 * re-delivers from at or before the gap's start (`streamCoverFromMs`; undefined: no reconciliation
 * stream), else the replay.
 */
export function gapFiller(gap: GapSpan, streamCoverFromMs: number | undefined): GapHandledBy {
  if (streamCoverFromMs === undefined) return 'replay';
  return Date.parse(gap.from) >= streamCoverFromMs ? 'reconcile' : 'replay';
}

/**
 * One replay for a set of gaps: from the earliest gap's UTC date (never before what the replay serves),
 * caught up at the latest gap's end. It re-delivers everything created from that date's midnight on.
 */
export function planGapReplay(gaps: readonly GapSpan[], nowMs: number): { date: string; targetMs: number } {
  const earliest = replayEarliestDate(nowMs);
  const from = Math.min(...gaps.map((g) => Date.parse(g.from)));
  // biome-ignore lint/complexity/useMathMinMax: ISO date strings compare as text, Math.max would not.
  const date = utcDate(from) < earliest ? earliest : utcDate(from);
  return { date, targetMs: Math.max(...gaps.map((g) => Date.parse(g.to))) };
}

/** Midnight (UTC) of a `YYYY-MM-DD` date, ms. */
export function midnightOf(date: string): number {
  return Date.parse(`${date}T00:00:00.000Z`);
}
