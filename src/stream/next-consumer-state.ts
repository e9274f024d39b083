/**
 * The stream consumer's transition function: `next(state, event) → { state, effects }`, pure (no I/O,
 * no timers, no clock: time comes in on events). The driver (stream-consumer.ts) performs the effects
 * in order and feeds their results back as events. The states, transitions and invariants are in
 * STATE-MACHINE.md; test/unit/stream-transition-table.test.ts covers every (state, event) pair.
 *
 * An event a state does not expect (e.g. `slept` while `live`) is ignored: the same state object
 * comes back with no effects.
 *
 *                 start                    200                  no frame for staleAfterMs
 *     stopped ─────────────► connecting ─────────► live ─────────────────────────► stale
 *        │ start with a gap      ▲   │ 422/429/5xx   │ drop, idle drop                │
 *        ▼                       │   ▼               ▼                                │
 *    replaying ◄──────────── backing_off ◄───────────┴────────────────────────────────┘
 *     │  │  │  delay over,        ▲  │ delay over, frames held
 *     │  │  │  a gap to fill      │  ▼
 *     │  │  └─ 422/429/5xx, stale ┘ holding ◄── a commit failed (live, replaying); retried until it
 *     │  └─ caught up ──► connecting            lands, then connecting or replaying
 *     └─ a pass caught up ──► stopped           (any state) ──signal aborted──► stopped
 */

import type { ConnectionState, ConsumerEvent, Effect, MachineState, Transition } from './consumer-machine.ts';
import { copyStreamCounters, rateLimitedDelay } from './consumer-machine.ts';
import {
  gapDescription,
  gapNeedsReplay,
  iso,
  parseTime,
  pickPosition,
  planReplay,
} from './consumer-position.ts';
import {
  backOff,
  endConnection,
  giveUpReplay,
  hold,
  keepFrame,
  liveEnded,
  log,
  nextBackoff,
  readFrame,
  replayEnded,
  replayFailed,
  reportGap,
  stop,
  toConnecting,
  toReplaying,
  transition,
  uncleanEnd,
} from './consumer-steps.ts';
import { flush } from './micro-batch.ts';
import type { StreamVia } from './types.ts';

export function next(state: MachineState, event: ConsumerEvent): Transition {
  const s: MachineState = {
    ...state,
    counters: copyStreamCounters(state.counters),
    connection: state.connection && { ...state.connection },
  };
  const fx: Effect[] = [];
  return handle(s, fx, event) ? { state: s, effects: fx } : { state, effects: [] };
}

/** Applies `event` to `s` (a copy) and lists the effects; false when the state does not expect it. */
function handle(s: MachineState, fx: Effect[], event: ConsumerEvent): boolean {
  const c = s.connection;
  switch (event.kind) {
    case 'start':
      if (s.phase !== 'stopped') return false;
      start(s, fx, event.now, event.cursor ?? {});
      return true;
    case 'stop':
      if (s.phase === 'stopped' || c?.ending) return false;
      // An open connection is closed first: frames it already delivered are kept, then `closed`.
      if (c) endConnection(c, fx, { kind: 'stopped' });
      else stop(s, fx, event.now, 'stop requested');
      return true;
    case 'continue':
      if (s.phase === 'stale') {
        s.counters.staleDetections += 1;
        const then = s.staleVia === 'replay' ? 'replaying' : 'connecting';
        backOff(s, fx, nextBackoff(s, event.jitter), then, 'stale connection dropped');
        return true;
      }
      if (s.phase === 'holding') {
        if (s.unsaved) hold(s, fx, event.jitter, 'commit still failing');
        else resume(s, fx, event.now, 'held frames committed');
        return true;
      }
      if (s.phase !== 'replaying' || c || s.replay) return false;
      if (s.unsaved) {
        retryHeld(s, fx, event.now, 'a commit failed');
        return true;
      }
      if (s.options.role === 'primary') fx.push({ kind: 'claim-replay' });
      else enterReplay(s, fx, event.now);
      return true;
    case 'replay-claimed':
      if (s.phase !== 'replaying' || c || s.replay) return false;
      if (event.granted) {
        s.replayFloorMs = event.floorMs;
        enterReplay(s, fx, event.now);
      } else {
        // Another connection of the organization replays; its replay (and the reconciliation stream)
        // covers this connection's gap too. Live data first.
        s.counters.replaysShared += 1;
        s.replayStartedAt = undefined;
        toConnecting(s, fx, 'another connection replays the gap');
      }
      return true;
    case 'opened':
      if (
        event.serverTimeMs !== undefined &&
        s.platformOffsetMs === undefined &&
        (s.phase === 'connecting' || s.phase === 'replaying')
      ) {
        // Before the first poke, the `Date` header (whole seconds: +500 ms is its midpoint) says how
        // far the platform's clock is from ours; the pokes' `ts` refine it.
        s.platformOffsetMs = event.serverTimeMs + 500 - event.now;
      }
      if (s.phase === 'connecting' && !c) {
        connected(s, fx, event.now);
        return true;
      }
      if (s.phase !== 'replaying' || c || !s.replay) return false;
      if (
        s.options.role === 'pass' &&
        s.options.passReplay === undefined &&
        s.replayStartedAt !== undefined
      ) {
        // A pass's T is its start on the platform's clock, known best now (the `Date` header, or a poke).
        s.replay = { ...s.replay, catchUpAtMs: s.replayStartedAt + (s.platformOffsetMs ?? 0) };
      }
      s.connection = openConnection(
        s.options.role === 'pass' ? 'reconcile' : 'replay',
        s.replay.catchUpAtMs,
        s.replay.deadline,
        event.now,
      );
      fx.push({
        kind: 'log',
        level: 'info',
        fields: { replayDate: s.replay.date || undefined, catchUpAt: iso(s.replay.catchUpAtMs) },
        message: s.options.role === 'pass' ? 'reconciliation stream connected' : 'SSE replay connected',
      });
      s.replay = undefined;
      fx.push({ kind: 'read' });
      return true;
    case 'open-failed': {
      const via: StreamVia | undefined =
        s.phase === 'connecting' && !c
          ? 'stream'
          : s.phase === 'replaying' && s.replay
            ? 'replay'
            : undefined;
      if (!via || c) return false;
      s.replay = undefined;
      openFailed(s, fx, event, via);
      return true;
    }
    case 'read-started':
      if (!c || c.ending) return false;
      c.waitStartedAt = event.now;
      return true;
    case 'frame':
      if (!c) return false;
      if (c.ending) keepFrame(s, c, event.now, event.frame);
      else readFrame(s, c, fx, event.now, event.frame);
      return true;
    case 'tick':
      if (!c || c.ending) return false;
      tick(s, c, fx, event.now);
      return true;
    case 'disconnected':
      if (!c || c.ending) return false;
      endConnection(
        c,
        fx,
        event.error === undefined
          ? { kind: 'ended' }
          : { kind: 'error', error: event.error, message: event.message ?? String(event.error) },
      );
      return true;
    case 'closed':
      if (!c?.ending) return false;
      s.connection = undefined;
      if (s.phase === 'live') liveEnded(s, fx, event.now, c, event.jitter);
      else replayEnded(s, fx, event.now, c, event.jitter);
      return true;
    case 'committed':
      if (!s.committing) return false;
      s.cursor = s.committing.cursor;
      s.counters.commits += 1;
      s.counters.committedFrames += s.committing.frames.length;
      s.committing = undefined;
      s.holdAttempt = 0;
      s.lastCommitAt = event.now;
      if (c?.commitStartedAt !== undefined) {
        // Time spent committing is not time the server was silent.
        c.waitStartedAt += event.now - c.commitStartedAt;
        c.commitStartedAt = undefined;
      }
      return true;
    case 'commit-failed':
      if (!s.committing) return false;
      commitFailed(s, fx, event);
      return true;
    case 'slept':
      if (s.phase === 'holding') {
        retryHeld(s, fx, event.now, 'retrying the held commit');
        return true;
      }
      if (s.phase !== 'backing_off') return false;
      if (s.unsaved) retryHeld(s, fx, event.now, 'a commit failed');
      else if (s.afterBackoff === 'replaying' || gapNeedsReplay(s, event.now)) {
        toReplaying(s, fx, `back-off elapsed; ${gapDescription(s)}`);
      } else {
        toConnecting(s, fx, 'back-off elapsed');
      }
      return true;
  }
}

/**
 * A commit failed. Permanent (the same write would fail again): the run fails. Otherwise its frames are
 * held and reading stops: the open connection is closed (the `closed` that follows enters `holding`), or
 * the next step that would open one retries the commit first.
 */
function commitFailed(
  s: MachineState,
  fx: Effect[],
  event: Extract<ConsumerEvent, { kind: 'commit-failed' }>,
): void {
  const failed = s.committing!;
  s.committing = undefined;
  s.counters.commitFailures += 1;
  if (event.permanent || s.phase === 'stopped') {
    log(fx, 'error', { err: event.error, frames: failed.frames.length }, 'SSE commit failed; giving up');
    fx.push({ kind: 'fail', error: event.error });
    return;
  }
  // The machine is the one owner of what did not land: an earlier write that failed in the pipelined
  // writer comes back with this failure, and goes first.
  s.unsaved = event.earlier?.length ? { ...failed, frames: [...event.earlier, ...failed.frames] } : failed;
  log(
    fx,
    'warn',
    { err: event.error, frames: failed.frames.length },
    'SSE commit failed; reading stops until it lands',
  );
  const c = s.connection;
  if (c && !c.ending) endConnection(c, fx, { kind: 'commit-failed' });
}

/** Commit what is held now (`holding`), then `continue` decides: hold again, or resume. */
function retryHeld(s: MachineState, fx: Effect[], now: number, reason: string): void {
  if (s.phase !== 'holding') transition(s, fx, 'holding', reason);
  flush(s, fx, now, s.unsaved?.via ?? s.bufferVia, 'retry', true);
  fx.push({ kind: 'continue' });
}

/** What is held has landed: go back to what the consumer was doing. */
function resume(s: MachineState, fx: Effect[], now: number, reason: string): void {
  s.holdAttempt = 0;
  if (s.options.role === 'pass' || s.afterBackoff === 'replaying' || gapNeedsReplay(s, now)) {
    toReplaying(s, fx, `${reason}; ${s.options.role === 'pass' ? 'the pass goes on' : gapDescription(s)}`);
  } else {
    toConnecting(s, fx, reason);
  }
}

function start(
  s: MachineState,
  fx: Effect[],
  now: number,
  loaded: NonNullable<MachineState['cursor']>,
): void {
  s.cursor = pickPosition(loaded);
  s.committing = undefined;
  s.lastStreamFrameAt = parseTime(loaded.lastLiveAt);
  // Not live yet: the gap runs from the last disconnect, or from the last sign of life if the
  // previous process died without recording one.
  s.gapStartMs = parseTime(loaded.lastDisconnectAt) ?? s.lastStreamFrameAt;
  s.gapReported = false;
  s.lastCommitAt = now;
  s.attempt = 0;
  s.idleRound = 0;
  s.replayFailures = 0;
  s.replayStartedAt = undefined;
  s.quietFromMs = undefined;
  s.lastPokeAtMs = undefined;
  s.replay = undefined;
  s.connection = undefined;
  // The offset the stored times were written with: it puts the gap start on the platform's clock.
  s.platformOffsetMs = s.cursor.platformOffsetMs;
  s.unsaved = undefined;
  s.holdAttempt = 0;
  s.rateLimitAttempt = 0;
  s.replayFloorMs = undefined;
  s.passOutcome = undefined;
  s.passReachedMs = undefined;
  s.passEndedQuiet = false;
  s.quietThroughMs = parseTime(s.cursor.quietAt);
  s.uncleanEnd = s.cursor.uncleanEnd;
  if (s.options.role === 'pass') {
    s.gapStartMs = undefined;
    s.replayStartedAt = now;
    toReplaying(s, fx, 'pass started');
    return;
  }
  if (loaded.lastLiveAt !== undefined && loaded.lastDisconnectAt === undefined) {
    // The last process died while the stream was live: what it had read and not committed is gone from
    // the stream (the platform moved its checkpoint when it sent it).
    uncleanEnd(s, fx, now, 'crash', 'state-change');
  } else if (s.uncleanEnd) {
    // Reported by the last process already (reporting is idempotent); again, in case it died first.
    reportGap(s, fx, s.uncleanEnd);
  }
  if (gapNeedsReplay(s, now)) toReplaying(s, fx, `start-up ${gapDescription(s)}`);
  else toConnecting(s, fx, 'start-up');
}

function openConnection(
  via: StreamVia,
  catchUpAtMs: number | undefined,
  deadline: number,
  now: number,
): ConnectionState {
  return {
    via,
    catchUpAtMs,
    deadline,
    waitStartedAt: now,
    pokesWithoutData: 0,
    pokesAfterCatchUp: 0,
    lastFrame: undefined,
    delivered: false,
    commitStartedAt: undefined,
    ending: undefined,
  };
}

function connected(s: MachineState, fx: Effect[], now: number): void {
  s.connection = openConnection('stream', undefined, Infinity, now);
  s.counters.connects += 1;
  if (s.counters.connects > 1) s.counters.reconnects += 1;
  // Connected: the stream resumes from its own server-side checkpoint, so the gap is closed.
  s.lastStreamFrameAt = now;
  s.quietFromMs = now;
  const hadGap = s.gapStartMs !== undefined || s.uncleanEnd !== undefined;
  // A connection that never committed anything commits that it is live now: a crash before its first
  // data commit is then found at the next start (and its gap begins at `deliveryFrom`).
  const firstConnect = s.cursor.lastLiveAt === undefined;
  s.gapStartMs = undefined;
  s.uncleanEnd = undefined;
  s.gapReported = false;
  if (hadGap || firstConnect) flush(s, fx, now, 'stream', 'state-change', true);
  transition(s, fx, 'live', 'connected');
  fx.push({ kind: 'read' });
}

function enterReplay(s: MachineState, fx: Effect[], now: number): void {
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

function openFailed(
  s: MachineState,
  fx: Effect[],
  event: Extract<ConsumerEvent, { kind: 'open-failed' }>,
  via: StreamVia,
) {
  const { failure, error, message, now } = event;
  const what = via === 'stream' ? 'stream connect' : s.options.role === 'pass' ? 'pass' : 'replay';
  if (failure === 'permanent' || (failure === 'refused' && via === 'stream')) {
    log(fx, 'error', { err: error }, `SSE ${what} refused permanently`);
    fx.push({ kind: 'fail', error });
    return;
  }
  if (failure === 'refused') return giveUpReplay(s, fx, now, `replay refused: ${message}`, error);
  if (failure === 'rate-limited') {
    // The hour's budget is spent: wait minutes, not seconds (independent of the stale rule's cap).
    s.counters.rateLimited += 1;
    const delay = rateLimitedDelay(
      s.rateLimitAttempt,
      s.options.backoff,
      () => event.jitter,
      event.retryAfterMs,
    );
    s.rateLimitAttempt += 1;
    const why = `${what} answered 429 (rate limited)`;
    log(fx, 'warn', { err: error, delayMs: delay }, `SSE ${why}`);
    return backOff(s, fx, delay, via === 'replay' ? 'replaying' : 'connecting', why);
  }
  if (failure === 'rebalancing') s.counters.rebalancing += 1;
  else s.counters.errors += 1;
  if (via === 'replay' && replayFailed(s)) {
    return giveUpReplay(s, fx, now, `replay failed ${s.options.replayAttempts} times: ${message}`, error);
  }
  let delay = nextBackoff(s, event.jitter);
  if (event.retryAfterMs !== undefined && event.retryAfterMs > delay) delay = event.retryAfterMs;
  const why = failure === 'rebalancing' ? `${what} answered 422 (rebalancing)` : `${what} failed: ${message}`;
  log(fx, 'warn', { err: error, delayMs: delay }, `SSE ${why}`);
  backOff(s, fx, delay, via === 'replay' ? 'replaying' : 'connecting', why);
}

function tick(s: MachineState, c: ConnectionState, fx: Effect[], now: number) {
  const { staleAfterMs, microBatch, heartbeatCommitMs } = s.options;
  if (now >= c.waitStartedAt + staleAfterMs) return endConnection(c, fx, { kind: 'stale' });
  if (now >= c.deadline) return endConnection(c, fx, { kind: 'timed-out' });
  const batchDue = s.buffer.length > 0 && now >= s.bufferSince + microBatch.maxWaitMs;
  const heartbeatDue = c.via === 'stream' && now >= s.lastCommitAt + heartbeatCommitMs;

  if (!batchDue && !heartbeatDue) return;
  if (flush(s, fx, now, c.via, batchDue ? 'time' : 'heartbeat', heartbeatDue)) c.commitStartedAt = now;
}
