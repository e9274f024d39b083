/**
 * The consumer's commits, pure: what happens when a commit lands or fails (the machine holds what did
 * not land, `holding`, and retries it before reading on), and the commits that end something: an
 * unclean end (its gap goes into the cursor), a stop, the end of a pass.
 */
import type { UncleanEndReason } from '../warehouse/cursors.ts';
import { gapDescription, gapNeedsReplay, openGap, uncleanGap } from './consumer-cursor.ts';
import {
  type ConsumerEvent,
  type Effect,
  endConnection,
  log,
  type MachineState,
  type PassOutcome,
  reportGap,
  toConnecting,
  toReplaying,
  transition,
} from './consumer-machine.ts';
import { holdDelay } from './consumer-waits.ts';
import { flush } from './micro-batch.ts';
import type { CommitReason } from './types.ts';

/** The commit handed over landed: the state takes its cursor. */
export function committed(s: MachineState, now: number): void {
  const landed = s.committing!;
  s.cursor = landed.cursor;
  s.counters.commits += 1;
  s.counters.committedFrames += landed.frames.length;
  s.committing = undefined;
  s.holdAttempt = 0;
  s.lastCommitAt = now;
  const c = s.connection;
  if (c?.commitStartedAt !== undefined) {
    // Time spent committing is not time the server was silent.
    c.waitStartedAt += now - c.commitStartedAt;
    c.commitStartedAt = undefined;
  }
}

/**
 * A commit failed. Permanent (the same write would fail again): the run fails. Otherwise its frames are
 * held and reading stops: the open connection is closed (the `closed` that follows enters `holding`), or
 * the next step that would open one retries the commit first.
 */
export function commitFailed(
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

/** Commit what is held now (`holding`), then `continue` decides: hold again, or resume. */
export function retryHeld(s: MachineState, fx: Effect[], now: number, reason: string): void {
  if (s.phase !== 'holding') transition(s, fx, 'holding', reason);
  flush(s, fx, now, s.unsaved?.via ?? s.bufferVia, 'retry', true);
  fx.push({ kind: 'continue' });
}

/** `continue` in `holding`: the retry failed again (hold on), or what was held landed (resume). */
export function heldContinue(s: MachineState, fx: Effect[], now: number, jitter: number): void {
  if (s.unsaved) hold(s, fx, jitter, 'commit still failing');
  else resume(s, fx, now, 'held frames committed');
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
