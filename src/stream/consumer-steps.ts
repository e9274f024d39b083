/**
 * The steps of the transition function (next-consumer-state.ts), pure: announce a state change, back
 * off, stop, hold frames whose commit failed, give a replay up and report a gap; what a frame does to the
 * state; what the consumer does once a connection it was reading has closed. Each step mutates the draft
 * state it is given and returns the effects it asks for.
 */
import type { PassEndReason, StreamGap, UncleanEndReason } from '../warehouse/cursors.ts';
import {
  type ConnectionEnd,
  type ConnectionState,
  type Effect,
  holdDelay,
  idleDelay,
  type LogLevel,
  type MachineState,
  type PassOutcome,
  reconnectDelay,
} from './consumer-machine.ts';
import {
  committedThrough,
  iso,
  notePlatformTime,
  openGap,
  parseTime,
  platformTimeEarly,
  platformTimeLate,
  uncleanGap,
} from './consumer-position.ts';
import { classifyFrame } from './frame-kinds.ts';
import { flush, flushIfDue, push } from './micro-batch.ts';
import type { ClassifiedFrame, CommitReason, DataFrame, SseFrame, StreamState } from './types.ts';

/**
 * Building blocks of the transition function (next-consumer-state.ts), pure: announce a state change,
 * back off, stop, hold frames whose commit failed, give a replay up and report a gap. Each mutates the
 * state copy it is given and appends the effects the driver performs, in order.
 */

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

export function reportGap(s: MachineState, fx: Effect[], gap: StreamGap): void {
  s.counters.gaps += 1;
  log(fx, 'warn', { ...gap }, 'SSE gap: events in it may be missing until a reconciliation pass covers it');
  fx.push({ kind: 'report-gap', gap });
}

/**
 * The stream ended uncleanly: whatever the platform had sent and we had not committed may be lost (its
 * checkpoint moved on send). The gap goes into the cursor, committed first with `commit` (a restart
 * that finds it reports it again), then it is reported. Without `commit` (the commit itself failed) it
 * rides on the retry of the held frames.
 */
export function uncleanEnd(
  s: MachineState,
  fx: Effect[],
  now: number,
  reason: UncleanEndReason,
  commit?: CommitReason,
): void {
  const gap = uncleanGap(s, now, reason);
  s.uncleanEnd = gap;
  s.counters.uncleanEnds += 1;
  if (commit) flush(s, fx, now, 'stream', commit, true);
  reportGap(s, fx, gap);
}

/**
 * A pass's connection ended uncleanly: what the platform had sent it and it had not committed is gone
 * from the stream it reads (the reconciliation stream moved its position on send). The gap runs from what
 * this connection committed (or, with nothing committed, where the pass's delivery began) to now.
 */
export function passCut(s: MachineState, fx: Effect[], now: number, reason: PassEndReason): void {
  const from = committedThrough(s) ?? platformTimeEarly(s, s.replayStartedAt ?? now);
  s.counters.uncleanEnds += 1;
  reportGap(s, fx, { from: iso(from), to: iso(Math.max(from, platformTimeLate(s, now))), reason });
}

/** A pass of the reconciliation stream is over: commit what it read, then stop. */
export function endPass(s: MachineState, fx: Effect[], now: number, outcome: PassOutcome, why: string) {
  s.passOutcome = outcome;
  s.connection = undefined;
  s.replay = undefined;
  flush(s, fx, now, 'reconcile', 'stop', true);
  transition(s, fx, 'stopped', `pass ${outcome}: ${why}`);
}

/** Flushes what was fully received and stops; a clean stop while live is a disconnect too. */
export function stop(s: MachineState, fx: Effect[], now: number, reason: string): void {
  if (s.options.role === 'pass') {
    endPass(s, fx, now, 'stopped', reason);
    return;
  }
  // The next start measures its downtime from here.
  if (s.phase === 'live') openGap(s, now);
  s.connection = undefined;
  s.replay = undefined;
  flush(s, fx, now, s.bufferVia, 'stop', true);
  transition(s, fx, 'stopped', reason);
}

export function nextBackoff(s: MachineState, jitter: number): number {
  const { backoff, staleAfterMs } = s.options;
  // Never longer than a silent connection is tolerated (STATE-MACHINE.md, "Timing rules").
  const delay = reconnectDelay(s.attempt, backoff, Math.min(backoff.capMs, staleAfterMs), () => jitter);
  s.attempt += 1;
  return delay;
}

export function backOff(
  s: MachineState,
  fx: Effect[],
  delayMs: number,
  then: 'connecting' | 'replaying',
  reason: string,
) {
  s.delayMs = delayMs;
  s.afterBackoff = then;
  transition(s, fx, 'backing_off', `${reason}; retry in ${delayMs} ms`);
  fx.push({ kind: 'sleep', ms: delayMs });
}

/**
 * Commits keep failing: the connection is closed, nothing more is read, and what is held (`unsaved`, the
 * buffer) is retried after a back-off (`holding` → `slept` → commit → `continue`).
 */
export function hold(s: MachineState, fx: Effect[], jitter: number, reason: string): void {
  const delay = holdDelay(s.holdAttempt, s.options.backoff, s.options.commitRetryMaxMs, () => jitter);
  s.holdAttempt += 1;
  s.delayMs = delay;
  const held = (s.unsaved?.frames.length ?? 0) + s.buffer.length;
  transition(s, fx, 'holding', `${reason}; ${held} frames held, commit retried in ${delay} ms`);
  fx.push({ kind: 'sleep', ms: delay });
}

export function toConnecting(s: MachineState, fx: Effect[], reason: string): void {
  transition(s, fx, 'connecting', reason);
  fx.push({ kind: 'open-stream' });
}

export function toReplaying(s: MachineState, fx: Effect[], reason: string): void {
  transition(s, fx, 'replaying', reason);
  fx.push({ kind: 'continue' });
}

export function transition(s: MachineState, fx: Effect[], to: StreamState, reason: string): void {
  fx.push({ kind: 'notify', from: s.phase, to, reason });
  s.phase = to;
}

export function log(fx: Effect[], level: LogLevel, fields: Record<string, unknown>, message: string) {
  fx.push({ kind: 'log', level, fields, message });
}

/**
 * What a frame does to the consumer's state (pure; part of the transition function): counted, buffered
 * for the next micro-batch, and possibly the end of its connection (the replay's hand-off, idle
 * hygiene's last poke, the replay's deadline). Frames that arrive after the end was decided are only
 * kept (`keepFrame`): they were fully received and the platform counts them as delivered.
 */

/** Decides that the open connection ends; the driver closes it and feeds `closed`. */
export function endConnection(c: ConnectionState, fx: Effect[], end: ConnectionEnd): void {
  c.ending = end;
  fx.push({ kind: 'close' });
}

export function readFrame(
  s: MachineState,
  c: ConnectionState,
  fx: Effect[],
  now: number,
  frame: SseFrame,
): void {
  const { via } = c;
  // Checked per frame too: a replay that keeps sending data never reaches the timer.
  if (now >= c.deadline) {
    endConnection(c, fx, { kind: 'timed-out' });
    keepFrame(s, c, now, frame);
    return;
  }
  if (!c.delivered) {
    // A connection that delivers is healthy again: the next back-off starts small.
    c.delivered = true;
    s.attempt = 0;
    s.rateLimitAttempt = 0;
  }
  if (via === 'stream') s.lastStreamFrameAt = frame.receivedAt;
  const classified = classifyFrame(frame);
  c.lastFrame = frame.type === 'oversized' ? 'oversized' : classified.kind;
  const frames = s.counters.frames;
  switch (classified.kind) {
    case 'data': {
      frames.data += 1;
      c.pokesWithoutData = 0;
      c.pokesAfterCatchUp = 0;
      if (via === 'stream') {
        s.idleRound = 0;
        s.quietFromMs = frame.receivedAt;
      }
      // A pass that delivers makes progress (the reconciliation stream resumes after it): its failures
      // in a row start again. A replay (of the primary, or a pass over the replay) restarts from its date,
      // so it does not.
      if (s.options.role === 'pass' && !s.options.passReplay) s.replayFailures = 0;
      const createdAtMs = parseTime(classified.createdAt);
      if (belowReplayFloor(s, via, createdAtMs)) s.counters.replaySkipped += 1;
      else push(s, now, via, bufferedItem(classified, frame)!);
      if (c.catchUpAtMs !== undefined && createdAtMs !== undefined && createdAtMs >= c.catchUpAtMs) {
        endConnection(c, fx, { kind: 'caught-up', why: `created_at ${classified.createdAt}` });
        return;
      }
      break;
    }
    case 'bad':
      frames.bad += 1;
      if (via === 'stream') s.quietFromMs = frame.receivedAt;
      fx.push({
        kind: 'log',
        level: 'warn',
        fields: { event: classified.event, reason: classified.reason },
        message: 'SSE frame quarantined',
      });
      push(s, now, via, bufferedItem(classified, frame)!);
      break;
    case 'poke': {
      frames.poke += 1;
      c.pokesWithoutData += 1;
      notePlatformTime(s, classified.payload, frame.receivedAt);
      if (via === 'stream') s.lastPokeAtMs = frame.receivedAt;
      const stamped = pokeTime(classified.payload) ?? frame.receivedAt + (s.platformOffsetMs ?? 0);
      // Nothing else flows and nothing of this connection is uncommitted: everything it was sent before
      // this poke is committed (or on its way, in order, before any later cursor).
      if ((via === 'stream' || s.options.role === 'pass') && s.buffer.length === 0 && !s.unsaved) {
        s.quietThroughMs = stamped;
        // The first such poke after data commits it: a crash's gap, and a pass judging what this connection
        // could still commit, start there (not at the next 60 s heartbeat).
        const committedQuiet = parseTime((s.committing?.cursor ?? s.cursor).quietAt);
        const newest = parseTime((s.committing?.cursor ?? s.cursor).newestCreatedAt);
        if (committedQuiet === undefined || (newest !== undefined && committedQuiet < newest)) {
          if (flush(s, fx, now, via, 'heartbeat', true)) c.commitStartedAt = now;
        }
      }
      const { idleHygiene, quietPokes } = s.options;
      if (via === 'stream' && idleHygiene.enabled && c.pokesWithoutData >= idleHygiene.maxPokesWithoutData) {
        endConnection(c, fx, { kind: 'idle' });
        return;
      }
      if (c.catchUpAtMs !== undefined) {
        // The platform pokes when nothing else flows: pokes stamped at or after T say everything created
        // before T has been sent. One alone may race a backlog the server is still preparing.
        c.pokesAfterCatchUp = stamped >= c.catchUpAtMs ? c.pokesAfterCatchUp + 1 : 0;
        if (quietPokes > 0 && c.pokesAfterCatchUp >= quietPokes) {
          const why = `${c.pokesAfterCatchUp} pokes since ${new Date(c.catchUpAtMs).toISOString()}: nothing more flows`;
          // A pass has then read everything; a replay has not handed off (the recipe ignores pokes).
          endConnection(
            c,
            fx,
            s.options.role === 'pass' ? { kind: 'caught-up', why } : { kind: 'quiet', why },
          );
          return;
        }
      }
      break;
    }
    case 'other':
      frames.other += 1;
      countOther(s, classified.event);
      fx.push({
        kind: 'log',
        level: 'debug',
        fields: { event: classified.event },
        message: 'SSE frame with another event name ignored',
      });
      break;
  }
  flushIfDue(s, fx, now, via);
}

/** A replayed data frame created before what was already committed (`replayFloorMs`): not written again. */
function belowReplayFloor(s: MachineState, via: string, createdAtMs: number | undefined): boolean {
  return (
    via === 'replay' &&
    s.replayFloorMs !== undefined &&
    createdAtMs !== undefined &&
    createdAtMs < s.replayFloorMs
  );
}

function pokeTime(payload: unknown): number | undefined {
  return parseTime((payload as { ts?: string } | null)?.ts);
}

/** Buffers a frame without acting on it (no state decisions), for frames left over at a close. */
export function keepFrame(s: MachineState, c: ConnectionState, now: number, frame: SseFrame): void {
  const { via } = c;
  if (via === 'stream') s.lastStreamFrameAt = frame.receivedAt;
  const classified = classifyFrame(frame);
  c.lastFrame = frame.type === 'oversized' ? 'oversized' : classified.kind;
  s.counters.frames[classified.kind] += 1;
  const item = bufferedItem(classified, frame);
  if (item?.kind === 'data' && belowReplayFloor(s, via, parseTime(item.createdAt))) {
    s.counters.replaySkipped += 1;
  } else if (item) {
    if (via === 'stream') s.quietFromMs = frame.receivedAt;
    push(s, now, via, item);
  } else if (classified.kind === 'other') {
    countOther(s, classified.event);
  }
}

/** What a data or bad frame puts in the micro-batch (nothing for pokes and other events). */
function bufferedItem(classified: ClassifiedFrame, frame: SseFrame): DataFrame | undefined {
  const { receivedAt } = frame;
  // The data's length in UTF-16 units, near enough its bytes for the batch's size bound.
  const bytes = frame.type === 'event' ? frame.data.length : frame.excerpt.length;
  if (classified.kind === 'data') {
    return { kind: 'data', payload: classified.payload, createdAt: classified.createdAt, receivedAt, bytes };
  }
  if (classified.kind === 'bad')
    return { kind: 'bad', text: classified.text, reason: classified.reason, receivedAt, bytes };
  return undefined;
}

function countOther(s: MachineState, event: string): void {
  s.counters.otherEvents[event] = (s.counters.otherEvents[event] ?? 0) + 1;
}

/**
 * What the consumer does once a connection it was reading has closed (pure; part of the transition
 * function): the main stream's end opens a gap, reports it when it was unclean, and backs off (or goes
 * stale, or pauses for idle hygiene); a replay's end hands off to the stream, retries, or leaves the gap
 * to the reconciliation stream; a pass's end is the end of the pass. A commit that failed while reading
 * turns any of them into `holding`.
 */

export function liveEnded(s: MachineState, fx: Effect[], now: number, c: ConnectionState, jitter: number) {
  const end = c.ending as ConnectionEnd;
  switch (end.kind) {
    case 'stopped':
      // Closed by us right after a poke: nothing was flowing, so nothing was in flight. Otherwise the
      // platform may have sent frames we never read.
      if (c.lastFrame !== 'poke') {
        openGap(s, now);
        uncleanEnd(s, fx, now, 'stopped', 'stop');
      }
      return stop(s, fx, now, 'stop requested');
    case 'stale':
      openGap(s, now);
      uncleanEnd(s, fx, now, 'stale', 'state-change');
      s.staleVia = 'stream';
      transition(s, fx, 'stale', `no frame for ${s.options.staleAfterMs} ms`);
      fx.push({ kind: 'continue' });
      return;
    case 'idle': {
      // Voluntary drop after pokes (connection hygiene): nothing was flowing, so no gap opens.
      const { backoff, idleHygiene } = s.options;
      s.counters.idleDrops += 1;
      flush(s, fx, now, 'stream', 'state-change', true);
      const delay = Math.max(backoff.minMs, idleDelay(s.idleRound, idleHygiene.delaysMs));
      s.idleRound += 1;
      return backOff(
        s,
        fx,
        delay,
        'connecting',
        `idle: ${idleHygiene.maxPokesWithoutData} pokes without data`,
      );
    }
    case 'commit-failed':
      openGap(s, now);
      uncleanEnd(s, fx, now, 'commit-failed');
      return hold(s, fx, jitter, 'commit failed: the stream is closed until it lands');
    default: {
      // `ended`, `error` (and the replay outcomes, which cannot happen here) open a gap.
      s.counters.errors += 1;
      openGap(s, now);
      uncleanEnd(s, fx, now, 'dropped', 'state-change');
      const why = end.kind === 'error' ? `disconnected: ${end.message}` : 'server ended the stream';
      log(fx, 'warn', { err: end.kind === 'error' ? end.error : undefined }, `SSE stream ${why}`);
      return backOff(s, fx, nextBackoff(s, jitter), 'connecting', why);
    }
  }
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
