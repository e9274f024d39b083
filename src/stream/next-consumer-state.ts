/**
 * The stream consumer's transition function: `next(state, event) → { state, effects }`, pure (no I/O,
 * no timers, no clock: time comes in on events). The driver (stream-consumer.ts) performs the effects
 * in order and feeds their results back as events. The states, transitions and invariants are in
 * STATE-MACHINE.md; test/unit/stream-transition-table.test.ts covers every (state, event) pair.
 *
 * An event a state does not expect (e.g. `slept` while `live`) is ignored: the same state object
 * comes back with no effects.
 */
import {
  flush,
  gapDescription,
  gapNeedsReplay,
  iso,
  parseTime,
  pickCheckpoint,
  planReplay,
} from './consumer-checkpoint.ts';
import { liveEnded, replayEnded } from './consumer-connection-end.ts';
import { endConnection, keepFrame, readFrame } from './consumer-frames.ts';
import type { ConnectionState, ConsumerEvent, Effect, MachineState, Transition } from './consumer-machine.ts';
import {
  backOff,
  giveUpReplay,
  log,
  nextBackoff,
  replayFailed,
  reportGap,
  stop,
  toConnecting,
  toReplaying,
  transition,
} from './consumer-steps.ts';
import { copyStreamCounters } from './stream-counters.ts';
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
      start(s, fx, event.now, event.checkpoint ?? {});
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
      if (s.phase !== 'replaying' || c || s.replay) return false;
      enterReplay(s, fx, event.now);
      return true;
    case 'opened':
      if (s.phase === 'connecting' && !c) {
        connected(s, fx, event.now);
        return true;
      }
      if (s.phase !== 'replaying' || c || !s.replay) return false;
      s.connection = openConnection('replay', s.replay.catchUpAtMs, s.replay.deadline, event.now);
      fx.push({
        kind: 'log',
        level: 'info',
        fields: { replayDate: s.replay.date, catchUpAt: iso(s.replay.catchUpAtMs) },
        message: 'SSE replay connected',
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
      if (s.phase === 'live') liveEnded(s, fx, event.now, c.ending, event.jitter);
      else replayEnded(s, fx, event.now, c, event.jitter);
      return true;
    case 'committed':
      if (!s.committing) return false;
      s.checkpoint = s.committing.checkpoint;
      s.counters.commits += 1;
      s.counters.committedFrames += s.committing.frames;
      s.committing = undefined;
      s.lastCommitAt = event.now;
      if (c?.commitStartedAt !== undefined) {
        // Time spent committing is not time the server was silent.
        c.waitStartedAt += event.now - c.commitStartedAt;
        c.commitStartedAt = undefined;
      }
      return true;
    case 'slept':
      if (s.phase !== 'backing_off') return false;
      if (s.afterBackoff === 'replaying' || gapNeedsReplay(s, event.now)) {
        toReplaying(s, fx, `back-off elapsed; ${gapDescription(s)}`);
      } else {
        toConnecting(s, fx, 'back-off elapsed');
      }
      return true;
  }
}

function start(
  s: MachineState,
  fx: Effect[],
  now: number,
  loaded: NonNullable<MachineState['checkpoint']>,
): void {
  s.checkpoint = pickCheckpoint(loaded);
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
  s.platformOffsetMs = s.checkpoint.platformOffsetMs;
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
  const hadGap = s.gapStartMs !== undefined;
  s.gapStartMs = undefined;
  s.gapReported = false;
  if (hadGap) flush(s, fx, now, 'stream', 'state-change', true);
  transition(s, fx, 'live', 'connected');
  fx.push({ kind: 'read' });
}

function enterReplay(s: MachineState, fx: Effect[], now: number): void {
  s.replayStartedAt ??= now;
  const deadline = s.replayStartedAt + s.options.replayTimeoutMs;
  if (now >= deadline) {
    giveUpReplay(
      s,
      fx,
      now,
      `replay timed out after ${s.options.replayTimeoutMs} ms`,
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
  const what = via === 'stream' ? 'stream connect' : 'replay';
  if (failure === 'permanent' || (failure === 'refused' && via === 'stream')) {
    log(fx, 'error', { err: error }, `SSE ${what} refused permanently`);
    fx.push({ kind: 'fail', error });
    return;
  }
  if (failure === 'refused') return giveUpReplay(s, fx, now, `replay refused: ${message}`, error);
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
