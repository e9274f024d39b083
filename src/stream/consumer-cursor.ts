/**
 * Where the consumer stands, pure: the cursor a commit carries, what is committed through, a gap's span
 * and whether it needs replay, and platform times estimated on our clock (erring on the safe side).
 */
import {
  PASS_END_REASONS,
  REPLAY_GAP_REASONS,
  type StreamCursorValue,
  type StreamGap,
  UNCLEAN_END_REASONS,
} from '../warehouse/cursors.ts';
import type { MachineState } from './consumer-machine.ts';
import type { DataFrame } from './types.ts';

export function parseTime(value: string | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The fields of a stored cursor the consumer reads (the caller may store more). */
export function pickCursor(loaded: StreamCursorValue): StreamCursorValue {
  const out: StreamCursorValue = {};
  if (typeof loaded.newestCreatedAt === 'string') out.newestCreatedAt = loaded.newestCreatedAt;
  if (typeof loaded.lastLiveAt === 'string') out.lastLiveAt = loaded.lastLiveAt;
  if (typeof loaded.lastDisconnectAt === 'string') out.lastDisconnectAt = loaded.lastDisconnectAt;
  if (typeof loaded.platformOffsetMs === 'number' && Number.isFinite(loaded.platformOffsetMs))
    out.platformOffsetMs = loaded.platformOffsetMs;
  if (typeof loaded.quietAt === 'string') out.quietAt = loaded.quietAt;
  if (typeof loaded.deliveryFrom === 'string') out.deliveryFrom = loaded.deliveryFrom;
  if (typeof loaded.connectedSince === 'string') out.connectedSince = loaded.connectedSince;
  const gap = loaded.uncleanEnd;
  if (
    gap &&
    typeof gap.from === 'string' &&
    typeof gap.to === 'string' &&
    ([...UNCLEAN_END_REASONS, ...PASS_END_REASONS, ...REPLAY_GAP_REASONS] as string[]).includes(gap.reason)
  )
    out.uncleanEnd = { from: gap.from, to: gap.to, reason: gap.reason };
  return out;
}

export function sameCursor(a: StreamCursorValue, b: StreamCursorValue): boolean {
  return (
    a.newestCreatedAt === b.newestCreatedAt &&
    a.lastLiveAt === b.lastLiveAt &&
    a.lastDisconnectAt === b.lastDisconnectAt &&
    a.platformOffsetMs === b.platformOffsetMs &&
    a.quietAt === b.quietAt &&
    a.deliveryFrom === b.deliveryFrom &&
    a.connectedSince === b.connectedSince &&
    a.uncleanEnd?.from === b.uncleanEnd?.from &&
    a.uncleanEnd?.to === b.uncleanEnd?.to
  );
}

export function nextCursor(s: MachineState, frames: DataFrame[]): StreamCursorValue {
  // A commit still in flight (the same transition flushed twice) is the base: it lands first.
  const next: StreamCursorValue = { ...(s.committing?.cursor ?? s.cursor) };
  let newestMs = parseTime(next.newestCreatedAt);
  for (const frame of frames) {
    if (frame.kind !== 'data') continue;
    const ms = parseTime(frame.createdAt);
    if (ms !== undefined && (newestMs === undefined || ms > newestMs)) {
      newestMs = ms;
      next.newestCreatedAt = frame.createdAt;
    }
  }
  if (s.lastStreamFrameAt !== undefined) next.lastLiveAt = iso(s.lastStreamFrameAt);
  if (s.gapStartMs !== undefined) next.lastDisconnectAt = iso(s.gapStartMs);
  else delete next.lastDisconnectAt;
  if (s.platformOffsetMs !== undefined) next.platformOffsetMs = s.platformOffsetMs;
  const quietAt = parseTime(next.quietAt);
  if (s.quietThroughMs !== undefined && (quietAt === undefined || s.quietThroughMs > quietAt))
    next.quietAt = iso(s.quietThroughMs);
  if (s.uncleanEnd) next.uncleanEnd = s.uncleanEnd;
  else delete next.uncleanEnd;
  return next;
}

/** The main stream dropped: the gap starts at its last frame (anything after may be missing). */
export function openGap(s: MachineState, now: number): void {
  if (s.gapStartMs === undefined) s.gapStartMs = s.lastStreamFrameAt ?? now;
}

/**
 * How far a platform time this process estimates may be off: our clock plus the offset the last poke's
 * `ts` showed (early by the poke's latency) or, before any poke, a `Date` header (whole seconds). Times
 * the platform stamped (`created_at`, a stream's creation) are exact. An estimate always errs on the safe
 * side by this much: the end of a gap and the moment a delivery stopped reading (after which nothing
 * was sent) later, the start of a gap that is not a `created_at` earlier. Comparisons are then exact.
 */
export const CLOCK_ESTIMATE_TOLERANCE_MS = 2_000;

/** Our clock's `ms` on the platform's clock (the offset the last poke showed; 0 before any). */
export function platformTime(s: MachineState, ms: number): number {
  return ms + (s.platformOffsetMs ?? 0);
}

/**
 * An estimated platform time that ends a gap (or starts one), erring on the safe side
 * (gap-delivery.ts, `CLOCK_ESTIMATE_TOLERANCE_MS`): a gap's end later, its start earlier.
 */
export function platformTimeLate(s: MachineState, ms: number): number {
  return platformTime(s, ms) + CLOCK_ESTIMATE_TOLERANCE_MS;
}

export function platformTimeEarly(s: MachineState, ms: number): number {
  return platformTime(s, ms) - CLOCK_ESTIMATE_TOLERANCE_MS;
}

/**
 * Where what this connection may lose begins (platform ms): after the later of the newest `created_at`
 * committed and the last poke that found nothing uncommitted (everything sent before it is committed).
 * With neither, where the stream's delivery to this connection began (`deliveryFrom`: a crash before the
 * first commit loses the backlog too); undefined when that is not known either.
 */
export function committedThrough(s: MachineState): number | undefined {
  const marks = [parseTime(s.cursor.newestCreatedAt), parseTime(s.cursor.quietAt), s.quietThroughMs].filter(
    (ms): ms is number => ms !== undefined,
  );
  if (marks.length > 0) return Math.max(...marks);
  return parseTime(s.cursor.deliveryFrom);
}

/** `committedThrough` of a committed cursor alone (what a crash right now would leave). */
export function committedThroughOf(cursor: StreamCursorValue): number | undefined {
  const marks = [parseTime(cursor.newestCreatedAt), parseTime(cursor.quietAt)].filter(
    (ms): ms is number => ms !== undefined,
  );
  if (marks.length > 0) return Math.max(...marks);
  return parseTime(cursor.deliveryFrom);
}

/**
 * What an unclean end may have lost: everything created after what is committed (`committedThrough`;
 * when nothing is known, after the stream was last heard from) up to the moment reading stopped.
 */
export function uncleanGap(s: MachineState, now: number, reason: StreamGap['reason']): StreamGap {
  const lastHeard = s.lastStreamFrameAt ?? now;
  const from = committedThrough(s) ?? platformTimeEarly(s, lastHeard);
  const to = Math.max(from, platformTimeLate(s, now));
  return { from: iso(from), to: iso(to), reason };
}

export function gapNeedsReplay(s: MachineState, now: number): boolean {
  return s.gapStartMs !== undefined && now - s.gapStartMs > s.options.gapAfterMs;
}

export function gapDescription(s: MachineState): string {
  if (s.gapStartMs === undefined) return 'no gap';
  return `gap since ${iso(s.gapStartMs)}: replay`;
}

/** `YYYY-MM-DD` of a time, in UTC. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * Before the first poke, a connection's `Date` header (whole seconds: +500 ms is its midpoint) says how
 * far the platform's clock is from ours; the pokes' `ts` refine it (consumer-frame.ts).
 */
export function noteDateHeader(s: MachineState, serverTimeMs: number | undefined, now: number): void {
  if (serverTimeMs !== undefined && s.platformOffsetMs === undefined) {
    s.platformOffsetMs = serverTimeMs + 500 - now;
  }
}
