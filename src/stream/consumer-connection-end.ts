/**
 * What the consumer does once a connection it was reading has closed (pure; part of the transition
 * function): the main stream's end opens a gap and backs off (or goes stale, or pauses for idle
 * hygiene); a replay's end hands off to the stream, retries, or gives the gap to a REST backfill.
 */
import { idleDelay } from './backoff-delay.ts';
import { flush, iso, openGap } from './consumer-checkpoint.ts';
import type { ConnectionEnd, ConnectionState, Effect, MachineState } from './consumer-machine.ts';
import {
  backOff,
  giveUpReplay,
  log,
  nextBackoff,
  replayFailed,
  stop,
  toConnecting,
  transition,
} from './consumer-steps.ts';

export function liveEnded(s: MachineState, fx: Effect[], now: number, end: ConnectionEnd, jitter: number) {
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

export function replayEnded(s: MachineState, fx: Effect[], now: number, c: ConnectionState, jitter: number) {
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
