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

import { commitFailed, committed, heldContinue, retryHeld, stop, uncleanEnd } from './consumer-commit.ts';
import { connected, liveEnded, openFailed, staleDropped, tick } from './consumer-connection.ts';
import { gapDescription, gapNeedsReplay, noteDateHeader, parseTime, pickCursor } from './consumer-cursor.ts';
import { keepFrame, readFrame } from './consumer-frame.ts';
import {
  type ConsumerEvent,
  copyStreamCounters,
  type Effect,
  endConnection,
  initialMachineState,
  type MachineState,
  reportGap,
  type Transition,
  toConnecting,
  toReplaying,
} from './consumer-machine.ts';
import { replayClaimed, replayEnded, replayNext, replayOpened } from './consumer-replay.ts';
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

/**
 * Applies `event` to `s` (a copy) and lists the effects; false when the state does not expect it. Each
 * event the state expects goes to its concern: the connection (consumer-connection.ts), a frame
 * (consumer-frame.ts), the replay and the pass (consumer-replay.ts), commits (consumer-commit.ts).
 */
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
      if (s.phase === 'stale') staleDropped(s, fx, event.jitter);
      else if (s.phase === 'holding') heldContinue(s, fx, event.now, event.jitter);
      else if (s.phase === 'replaying' && !c && !s.replay) replayNext(s, fx, event.now);
      else return false;
      return true;
    case 'replay-claimed':
      if (s.phase !== 'replaying' || c || s.replay) return false;
      replayClaimed(s, fx, event);
      return true;
    case 'opened':
      if (c || !(s.phase === 'connecting' || (s.phase === 'replaying' && s.replay))) return false;
      noteDateHeader(s, event.serverTimeMs, event.now);
      if (s.phase === 'connecting') connected(s, fx, event.now);
      else replayOpened(s, fx, event.now);
      return true;
    case 'open-failed': {
      const via: StreamVia | undefined =
        s.phase === 'connecting' ? 'stream' : s.phase === 'replaying' && s.replay ? 'replay' : undefined;
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
      if (c.ending) keepFrame(s, c, fx, event.now, event.frame);
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
      committed(s, event.now);
      return true;
    case 'commit-failed':
      if (!s.committing) return false;
      commitFailed(s, fx, event);
      return true;
    case 'slept':
      if (s.phase === 'holding') retryHeld(s, fx, event.now, 'retrying the held commit');
      else if (s.phase !== 'backing_off') return false;
      else if (s.unsaved) retryHeld(s, fx, event.now, 'a commit failed');
      else if (s.afterBackoff === 'replaying' || gapNeedsReplay(s, event.now)) {
        toReplaying(s, fx, `back-off elapsed; ${gapDescription(s)}`);
      } else toConnecting(s, fx, 'back-off elapsed');
      return true;
  }
}

/** The cursor was loaded: a pass enters its replay; the primary reports a crash's gap, then replays or connects. */
function start(
  s: MachineState,
  fx: Effect[],
  now: number,
  loaded: NonNullable<MachineState['cursor']>,
): void {
  const cursor = pickCursor(loaded);
  const lastStreamFrameAt = parseTime(loaded.lastLiveAt);
  // A run starts afresh: every field at its initial value (a field added later is reset too) but what
  // carries over (the counters, the micro-batch, the last wait), then what the loaded cursor says.
  const { phase, counters, buffer, bufferBytes, bufferVia, bufferSince, delayMs, afterBackoff, staleVia } = s;
  Object.assign(s, initialMachineState(s.options), {
    phase,
    counters,
    buffer,
    bufferBytes,
    bufferVia,
    bufferSince,
    delayMs,
    afterBackoff,
    staleVia,
    cursor,
    lastStreamFrameAt,
    // Not live yet: the gap runs from the last disconnect, or from the last sign of life if the
    // previous process died without recording one.
    gapStartMs: parseTime(loaded.lastDisconnectAt) ?? lastStreamFrameAt,
    lastCommitAt: now,
    // The offset the stored times were written with: it puts the gap start on the platform's clock.
    platformOffsetMs: cursor.platformOffsetMs,
    quietThroughMs: parseTime(cursor.quietAt),
    uncleanEnd: cursor.uncleanEnd,
  });
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
