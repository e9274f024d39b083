/**
 * The replay and the pass, pure: entering a replay (one per organization, claimed) or a pass, what it
 * plans (its date and its hand-off T on the platform's clock), its connection opened, and what happens
 * when it ends: handed off, retried, cut (a pass's own gap), or given up to the reconciliation stream.
 */
import type { PassEndReason, StreamGap } from '../warehouse/cursors.ts';
import { endPass, hold, retryHeld, stop } from './consumer-commit.ts';
import {
  committedThrough,
  iso,
  parseTime,
  platformTime,
  platformTimeEarly,
  platformTimeLate,
  utcDate,
} from './consumer-cursor.ts';
import {
  type ConnectionEnd,
  type ConnectionState,
  type ConsumerEvent,
  type Effect,
  log,
  type MachineState,
  openConnection,
  reportGap,
  toConnecting,
  transition,
} from './consumer-machine.ts';
import { backOff, nextBackoff } from './consumer-waits.ts';
import { flush } from './micro-batch.ts';

/**
 * `continue` in `replaying` with nothing open: a held commit is retried first; otherwise the primary asks
 * whether it runs the organization's replay (`claim-replay`), and a pass enters its replay at once.
 */
export function replayNext(s: MachineState, fx: Effect[], now: number): void {
  if (s.unsaved) retryHeld(s, fx, now, 'a commit failed');
  else if (s.options.role === 'primary') fx.push({ kind: 'claim-replay' });
  else enterReplay(s, fx, now);
}

/** The answer to `claim-replay`. */
export function replayClaimed(
  s: MachineState,
  fx: Effect[],
  event: Extract<ConsumerEvent, { kind: 'replay-claimed' }>,
): void {
  if (event.granted) {
    s.replayFloorMs = event.floorMs;
    enterReplay(s, fx, event.now);
    return;
  }
  // Another connection of the organization replays; its replay (and the reconciliation stream)
  // covers this connection's gap too. Live data first.
  s.counters.replaysShared += 1;
  s.replayStartedAt = undefined;
  toConnecting(s, fx, 'another connection replays the gap');
}

export function enterReplay(s: MachineState, fx: Effect[], now: number): void {
  s.replayStartedAt ??= now;
  const pass = s.options.role === 'pass';
  const timeoutMs = pass ? s.options.passTimeoutMs : s.options.replayTimeoutMs;
  const deadline = s.replayStartedAt + timeoutMs;
  if (now >= deadline) {
    giveUpReplay(
      s,
      fx,
      now,
      `${pass ? 'pass' : 'replay'} timed out after ${timeoutMs} ms`,
      undefined,
      'replay-timed-out',
    );
    return;
  }
  const plan = planReplay(s, now);
  if (plan.tooLong && !s.gapReported) {
    s.gapReported = true;
    reportGap(s, fx, plan.tooLong);
  }
  s.counters.replays += 1;
  s.replay = { date: plan.replayDate, catchUpAtMs: plan.catchUpAtMs, deadline };
  fx.push({ kind: 'open-replay', date: plan.replayDate });
}

/** The planned replay (or pass) answered 200: read it. */
export function replayOpened(s: MachineState, fx: Effect[], now: number): void {
  let replay = s.replay!;
  if (s.options.role === 'pass' && s.options.passReplay === undefined && s.replayStartedAt !== undefined) {
    // A pass's T is its start on the platform's clock, known best now (the `Date` header, or a poke).
    // A new object: the state `next` was given shares the old one.
    replay = { ...replay, catchUpAtMs: s.replayStartedAt + (s.platformOffsetMs ?? 0) };
  }
  s.connection = openConnection(
    s.options.role === 'pass' ? 'reconcile' : 'replay',
    replay.catchUpAtMs,
    replay.deadline,
    now,
  );
  log(
    fx,
    'info',
    { replayDate: replay.date || undefined, catchUpAt: iso(replay.catchUpAtMs) },
    s.options.role === 'pass' ? 'reconciliation stream connected' : 'SSE replay connected',
  );
  s.replay = undefined;
  fx.push({ kind: 'read' });
}

export function replayEnded(s: MachineState, fx: Effect[], now: number, c: ConnectionState, jitter: number) {
  const end = c.ending as ConnectionEnd;
  const { replayAttempts, replayTimeoutMs, staleAfterMs } = s.options;
  const pass = s.options.role === 'pass';
  const via = c.via;
  // Closed by us right after a poke: nothing was flowing, so nothing was in flight.
  const quiet = c.lastFrame === 'poke';
  switch (end.kind) {
    case 'stopped':
      if (pass) {
        if (quiet) s.passEndedQuiet = true;
        else passCut(s, fx, now, 'pass-stopped');
      }
      return stop(s, fx, now, 'stop requested');
    case 'caught-up':
      s.counters.replaysCaughtUp += 1;
      s.replayFailures = 0;
      if (pass) {
        s.passReachedMs = c.catchUpAtMs;
        s.passEndedQuiet = quiet;
        s.replayStartedAt = undefined;
        return endPass(s, fx, now, 'caught-up', end.why);
      }
      s.replayStartedAt = undefined;
      // Everything up to now is in; should the main stream stay unreachable for long, the next gap
      // starts here.
      s.gapStartMs = now;
      flush(s, fx, now, via, 'state-change', true);
      return toConnecting(s, fx, `replay caught up (${end.why})`);
    case 'quiet':
      flush(s, fx, now, via, 'state-change', true);
      return giveUpReplay(
        s,
        fx,
        now,
        `replay sent no event created at or after T (${end.why})`,
        undefined,
        'replay-quiet',
      );
    case 'timed-out': {
      const limit = pass ? s.options.passTimeoutMs : replayTimeoutMs;
      if (pass && !quiet) passCut(s, fx, now, 'pass-timed-out');
      flush(s, fx, now, via, 'state-change', true);
      return giveUpReplay(
        s,
        fx,
        now,
        `${pass ? 'pass' : 'replay'} timed out after ${limit} ms without an event created at or after ${iso(c.catchUpAtMs ?? now)}`,
        undefined,
        'replay-timed-out',
      );
    }
    case 'commit-failed':
      // The replay (or the pass) is resumed once what it read has landed.
      if (pass) passCut(s, fx, now, 'pass-commit-failed');
      s.afterBackoff = 'replaying';
      return hold(s, fx, jitter, `commit failed: the ${pass ? 'pass' : 'replay'} is closed until it lands`);
    case 'stale':
      flush(s, fx, now, via, 'state-change', true);
      if (pass) passCut(s, fx, now, 'pass-stale');
      if (replayFailed(s))
        return giveUpReplay(s, fx, now, `replay failed ${replayAttempts} times: stale`, undefined);
      s.staleVia = 'replay';
      transition(s, fx, 'stale', `no ${pass ? 'pass' : 'replay'} frame for ${staleAfterMs} ms`);
      fx.push({ kind: 'continue' });
      return;
    default: {
      // A replay the server ends before the hand-off has not caught up: retry it like a drop. A pass
      // resumes where the reconciliation stream left off.
      s.counters.errors += 1;
      flush(s, fx, now, via, 'state-change', true);
      if (pass) passCut(s, fx, now, 'pass-dropped');
      const what = pass ? 'pass' : 'replay';
      const why =
        end.kind === 'error'
          ? `${what} disconnected: ${end.message}`
          : end.kind === 'ended'
            ? `${what} ended before the hand-off`
            : `${what} idle`;
      if (replayFailed(s))
        return giveUpReplay(s, fx, now, `${what} failed ${replayAttempts} times: ${why}`, undefined);
      return backOff(s, fx, nextBackoff(s, jitter), 'replaying', why);
    }
  }
}

/** Counts a failed replay attempt; true once `replayAttempts` failed in a row. */
export function replayFailed(s: MachineState): boolean {
  s.replayFailures += 1;
  return s.replayFailures >= s.options.replayAttempts;
}

/**
 * The replay cannot serve this gap (a 400 for a date it no longer keeps, it keeps failing, or it ran out
 * of time): report the gap, which the organization leaves to the reconciliation stream (or to REST when
 * no stream reaches it), and go back to the main stream rather than staying off it. A pass of the
 * reconciliation stream that cannot go on ends instead (`failed`, or `timed-out`).
 */
export function giveUpReplay(
  s: MachineState,
  fx: Effect[],
  now: number,
  why: string,
  error: unknown,
  reason: 'replay-unavailable' | 'replay-timed-out' | 'replay-quiet' = 'replay-unavailable',
): void {
  s.replayFailures = 0;
  s.replayStartedAt = undefined;
  if (s.options.role === 'pass') {
    log(fx, 'warn', { err: error }, `reconciliation pass: ${why}`);
    endPass(s, fx, now, reason === 'replay-timed-out' ? 'timed-out' : 'failed', why);
    return;
  }
  log(fx, 'warn', { err: error }, `SSE ${why}; the gap is left to the reconciliation stream`);
  const from = s.gapStartMs ?? now;
  reportGap(s, fx, { from: iso(platformTimeEarly(s, from)), to: iso(platformTimeLate(s, now)), reason });
  s.gapStartMs = now;
  toConnecting(s, fx, why);
}

/**
 * A pass's connection ended uncleanly: what the platform had sent it and it had not committed is gone
 * from the stream it reads (the reconciliation stream moved its checkpoint on send). The gap runs from what
 * this connection committed (or, with nothing committed, where the pass's delivery began) to now.
 */
export function passCut(s: MachineState, fx: Effect[], now: number, reason: PassEndReason): void {
  const from = committedThrough(s) ?? platformTimeEarly(s, s.replayStartedAt ?? now);
  s.counters.uncleanEnds += 1;
  reportGap(s, fx, { from: iso(from), to: iso(Math.max(from, platformTimeLate(s, now))), reason });
}

/**
 * The gap's replay plan with T on the platform's clock (STATE-MACHINE.md, "Which clock T is on"):
 * the gap start (our clock) shifted by the offset the last poke showed, and always after the newest
 * committed `created_at`: an event already committed (a replay re-sends it) is never the hand-off,
 * however early a skewed clock or a slow poke put T.
 */
export function planReplay(s: MachineState, nowMs: number): ReturnType<typeof planGapFill> {
  if (s.options.role === 'pass') {
    // A pass reads the reconciliation stream from where its last pass left off, up to now; a pass over
    // the replay (its connection knows the date) up to its target.
    return {
      replayDate: '',
      catchUpAtMs: s.options.passReplay?.catchUpAtMs ?? platformTime(s, nowMs),
      tooLong: undefined,
    };
  }
  const offset = s.platformOffsetMs ?? 0;
  const gapStart = s.gapStartMs ?? nowMs;
  const plan = planGapFill(nowMs + offset, gapStart + offset, s.options);
  const newest = parseTime(s.cursor.newestCreatedAt);
  // created_at has millisecond precision: one millisecond later is the first instant not yet committed.
  const afterNewest = newest === undefined ? undefined : newest + 1;
  return afterNewest !== undefined && afterNewest > plan.catchUpAtMs
    ? { ...plan, catchUpAtMs: afterNewest }
    : plan;
}

/**
 * How to fill a gap in the main stream, as a pure function of "now" and the gap start T
 * (docs/platform.md, "Replay"): replay from T's UTC date until an event with `created_at` ≥ T arrives,
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
