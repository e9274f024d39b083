/**
 * Building blocks of the transition function (next-consumer-state.ts), pure: announce a state change,
 * back off, stop, hold frames whose commit failed, give a replay up and report a gap. Each mutates the
 * state copy it is given and appends the effects the driver performs, in order.
 */

import type { StreamGap, UncleanEndReason } from '../warehouse/cursors.ts';
import type { Effect, LogLevel, MachineState, PassOutcome } from './consumer-machine.ts';
import { flush, iso, openGap, platformTime, uncleanGap } from './consumer-position.ts';
import { holdDelay, reconnectDelay } from './reconnect-delays.ts';
import type { CommitReason, StreamState } from './types.ts';

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
  reportGap(s, fx, { from: iso(platformTime(s, from)), to: iso(platformTime(s, now)), reason });
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
 * checkpoint moved on send). The gap goes into the checkpoint, committed first with `commit` (a restart
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
  const delay = reconnectDelay(s.attempt, backoff, Math.min(backoff.maxMs, staleAfterMs), () => jitter);
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
