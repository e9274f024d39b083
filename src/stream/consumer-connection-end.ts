/**
 * What the consumer does once a connection it was reading has closed (pure; part of the transition
 * function): the main stream's end opens a gap, reports it when it was unclean, and backs off (or goes
 * stale, or pauses for idle hygiene); a replay's end hands off to the stream, retries, or leaves the gap
 * to the reconciliation stream; a pass's end is the end of the pass. A commit that failed while reading
 * turns any of them into `holding`.
 */

import type { ConnectionEnd, ConnectionState, Effect, MachineState } from './consumer-machine.ts';
import { flush, iso, openGap } from './consumer-position.ts';
import {
  backOff,
  endPass,
  giveUpReplay,
  hold,
  log,
  nextBackoff,
  replayFailed,
  stop,
  toConnecting,
  transition,
  uncleanEnd,
} from './consumer-steps.ts';
import { idleDelay } from './reconnect-delays.ts';

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
  switch (end.kind) {
    case 'stopped':
      return stop(s, fx, now, 'stop requested');
    case 'caught-up':
      s.counters.replaysCaughtUp += 1;
      s.replayFailures = 0;
      s.replayStartedAt = undefined;
      if (pass) {
        s.passReachedMs = c.catchUpAtMs;
        return endPass(s, fx, now, 'caught-up', end.why);
      }
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
      s.afterBackoff = 'replaying';
      return hold(s, fx, jitter, `commit failed: the ${pass ? 'pass' : 'replay'} is closed until it lands`);
    case 'stale':
      flush(s, fx, now, via, 'state-change', true);
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
