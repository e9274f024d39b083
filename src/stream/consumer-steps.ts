/**
 * Building blocks of the transition function (next-consumer-state.ts), pure: announce a state change,
 * back off, stop, give a replay up and report its gap. Each mutates the state copy it is given and
 * appends the effects the driver performs, in order.
 */
import { reconnectDelay } from './backoff-delay.ts';
import { flush, iso, openGap } from './consumer-checkpoint.ts';
import type { Effect, LogLevel, MachineState } from './consumer-machine.ts';
import type { GapTooLong, StreamState } from './types.ts';

/** Counts a failed replay attempt; true once `replayAttempts` failed in a row. */
export function replayFailed(s: MachineState): boolean {
  s.replayFailures += 1;
  return s.replayFailures >= s.options.replayAttempts;
}

/**
 * The replay cannot serve this gap (a 400 for a date it no longer keeps, or it keeps failing): hand
 * the gap to a REST backfill and go back to the main stream rather than staying off it forever.
 */
export function giveUpReplay(
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

export function reportGap(s: MachineState, fx: Effect[], gap: GapTooLong): void {
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
export function stop(s: MachineState, fx: Effect[], now: number, reason: string): void {
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
