/**
 * The stream consumer's transition function: `next(state, event) → { state, effects }`, pure (no I/O,
 * no timers, no clock: time comes in on events). The driver (stream-consumer.ts) performs the effects
 * in order and feeds their results back as events. The states, transitions and invariants are in
 * STATE-MACHINE.md; test/unit/stream-transition-table.test.ts covers every (state, event) pair.
 *
 * An event a state does not expect (e.g. `slept` while `live`) is ignored: the same state object
 * comes back with no effects.
 */
import { idleDelay, reconnectDelay } from './backoff-delay.ts';
import {
  flush,
  gapDescription,
  gapNeedsReplay,
  iso,
  openGap,
  parseTime,
  pickCheckpoint,
  planReplay,
} from './consumer-checkpoint.ts';
import { endConnection, keepFrame, readFrame } from './consumer-frames.ts';
import type {
  ConnectionEnd,
  ConnectionState,
  ConsumerEvent,
  Effect,
  MachineState,
  Transition,
} from './consumer-machine.ts';
import { copyStreamCounters } from './stream-counters.ts';
import type { GapTooLong, StreamState, StreamVia } from './types.ts';

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

function liveEnded(s: MachineState, fx: Effect[], now: number, end: ConnectionEnd, jitter: number) {
  switch (end.kind) {
    case 'stopped':
      return stop(s, fx, now, 'stop requested');
    case 'stale':
      openGap(s, now);
      flush(s, fx, now, 'stream', 'state-change', true);
      s.staleVia = 'stream';
      transition(s, fx, 'stale', `no frame for ${s.options.staleAfterMs} ms`);
      fx.push({ kind: 'continue' });
      return;
    case 'idle': {
      // Voluntary drop (connection hygiene): the stream keeps its checkpoint, so no gap opens.
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
    default: {
      // `ended`, `error` (and the replay outcomes, which cannot happen here) open a gap.
      s.counters.errors += 1;
      openGap(s, now);
      flush(s, fx, now, 'stream', 'state-change', true);
      const why = end.kind === 'error' ? `disconnected: ${end.message}` : 'server ended the stream';
      log(fx, 'warn', { err: end.kind === 'error' ? end.error : undefined }, `SSE stream ${why}`);
      return backOff(s, fx, nextBackoff(s, jitter), 'connecting', why);
    }
  }
}

function replayEnded(s: MachineState, fx: Effect[], now: number, c: ConnectionState, jitter: number) {
  const end = c.ending as ConnectionEnd;
  const { replayAttempts, replayTimeoutMs, staleAfterMs } = s.options;
  switch (end.kind) {
    case 'stopped':
      return stop(s, fx, now, 'stop requested');
    case 'caught-up':
      // Everything up to now is in; should the main stream stay unreachable for long, the next gap
      // starts here.
      s.counters.replaysCaughtUp += 1;
      s.replayFailures = 0;
      s.replayStartedAt = undefined;
      s.gapStartMs = now;
      flush(s, fx, now, 'replay', 'state-change', true);
      return toConnecting(s, fx, `replay caught up (${end.why})`);
    case 'timed-out':
      flush(s, fx, now, 'replay', 'state-change', true);
      return giveUpReplay(
        s,
        fx,
        now,
        `replay timed out after ${replayTimeoutMs} ms without an event created at or after ${iso(c.catchUpAtMs ?? now)}`,
        undefined,
        'replay-timed-out',
      );
    case 'stale':
      flush(s, fx, now, 'replay', 'state-change', true);
      if (replayFailed(s))
        return giveUpReplay(s, fx, now, `replay failed ${replayAttempts} times: stale`, undefined);
      s.staleVia = 'replay';
      transition(s, fx, 'stale', `no replay frame for ${staleAfterMs} ms`);
      fx.push({ kind: 'continue' });
      return;
    default: {
      // A replay the server ends before the hand-off has not caught up: retry it like a drop.
      s.counters.errors += 1;
      flush(s, fx, now, 'replay', 'state-change', true);
      const why =
        end.kind === 'error'
          ? `replay disconnected: ${end.message}`
          : end.kind === 'ended'
            ? 'replay ended before the hand-off'
            : 'replay idle';
      if (replayFailed(s))
        return giveUpReplay(s, fx, now, `replay failed ${replayAttempts} times: ${why}`, undefined);
      return backOff(s, fx, nextBackoff(s, jitter), 'replaying', why);
    }
  }
}

/** Counts a failed replay attempt; true once `replayAttempts` failed in a row. */
function replayFailed(s: MachineState): boolean {
  s.replayFailures += 1;
  return s.replayFailures >= s.options.replayAttempts;
}

/**
 * The replay cannot serve this gap (a 400 for a date it no longer keeps, or it keeps failing): hand
 * the gap to a REST backfill and go back to the main stream rather than staying off it forever.
 */
function giveUpReplay(
  s: MachineState,
  fx: Effect[],
  now: number,
  why: string,
  error: unknown,
  reason: 'replay-unavailable' | 'replay-timed-out' = 'replay-unavailable',
): void {
  log(fx, 'warn', { err: error }, `SSE ${why}; the gap needs a REST backfill`);
  s.replayFailures = 0;
  s.replayStartedAt = undefined;
  reportGap(s, fx, { from: iso(s.gapStartMs ?? now), to: iso(now), reason });
  s.gapStartMs = now;
  toConnecting(s, fx, why);
}

function reportGap(s: MachineState, fx: Effect[], gap: GapTooLong): void {
  s.counters.gapsTooLong += 1;
  log(
    fx,
    'warn',
    { ...gap },
    'SSE gap too long for replay/stream to fill alone; plan a REST backfill for it',
  );
  fx.push({ kind: 'report-gap', gap });
}

/** Flushes what was fully received and stops; a clean stop while live is a disconnect too. */
function stop(s: MachineState, fx: Effect[], now: number, reason: string): void {
  // The next start measures its downtime from here.
  if (s.phase === 'live') openGap(s, now);
  s.connection = undefined;
  s.replay = undefined;
  flush(s, fx, now, s.bufferVia, 'stop', true);
  transition(s, fx, 'stopped', reason);
}

function nextBackoff(s: MachineState, jitter: number): number {
  const { backoff, staleAfterMs } = s.options;
  // Never longer than a silent connection is tolerated (STATE-MACHINE.md, "Timing rules").
  const delay = reconnectDelay(s.attempt, backoff, Math.min(backoff.maxMs, staleAfterMs), () => jitter);
  s.attempt += 1;
  return delay;
}

function backOff(
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

function toConnecting(s: MachineState, fx: Effect[], reason: string): void {
  transition(s, fx, 'connecting', reason);
  fx.push({ kind: 'open-stream' });
}

function toReplaying(s: MachineState, fx: Effect[], reason: string): void {
  transition(s, fx, 'replaying', reason);
  fx.push({ kind: 'continue' });
}

function transition(s: MachineState, fx: Effect[], to: StreamState, reason: string): void {
  fx.push({ kind: 'notify', from: s.phase, to, reason });
  s.phase = to;
}

function log(
  fx: Effect[],
  level: 'debug' | 'info' | 'warn' | 'error',
  fields: Record<string, unknown>,
  message: string,
) {
  fx.push({ kind: 'log', level, fields, message });
}
