/**
 * Every wait of the stream consumer, pure: when the driver wakes while reading, how long the consumer
 * has been provably idle, and the delays before a reconnect, after a 429, before retrying a held commit
 * and after an idle drop, in the consumer's own option names on the one back-off formula of
 * src/time/backoff-delay.ts; and the step that backs off.
 */
import type { StreamBackoffSettings } from '../config/stream-options.ts';
import { backoffDelay } from '../time/backoff-delay.ts';
import { type Effect, type MachineState, transition } from './consumer-machine.ts';
import type { StreamState } from './types.ts';

/**
 * When the driver should wake up while waiting for bytes (ms): the earliest of stale, the micro-batch's
 * age limit, the heartbeat commit and the replay's deadline. `staleAt` too, for the driver's last look
 * at the socket before calling a connection stale.
 */
export function readTimers(state: MachineState): { wakeAt: number; staleAt: number } {
  const c = state.connection;
  if (!c) return { wakeAt: Infinity, staleAt: Infinity };
  const { staleAfterMs, microBatch, heartbeatCommitMs } = state.options;
  const staleAt = c.waitStartedAt + staleAfterMs;
  const batchAt = state.buffer.length > 0 ? state.bufferSince + microBatch.maxWaitMs : Infinity;
  const heartbeatAt = c.via === 'stream' ? state.lastCommitAt + heartbeatCommitMs : Infinity;
  return { wakeAt: Math.min(staleAt, batchAt, heartbeatAt, c.deadline), staleAt };
}

/**
 * How long a consumer has been provably idle, as a pure function of what it saw (STATE-MACHINE.md,
 * "Idle"). Idle means live and quiet: the main stream is open, pokes keep arriving, no data frame
 * came, and nothing waits to be committed. The quiet span is measured between two things the platform
 * did: the later of "connected" and "last data frame", and the last poke after it. A connection gone
 * silent sends no pokes, so its span stops growing; any other state (connecting, backing off, stale,
 * replaying) is not idle at all.
 */
export interface QuietInput {
  state: StreamState;
  /** Frames buffered (or in flight to the warehouse) and not yet committed. */
  pendingFrames: number;
  /** Clock time (ms) the connection went live or last delivered a data frame, whichever is later. */
  quietFromMs: number | undefined;
  /** Clock time (ms) of the last poke on the main stream. */
  lastPokeAtMs: number | undefined;
}

/** Milliseconds of witnessed quiet (0 when not idle at all). */
export function quietForMs(input: QuietInput): number {
  if (input.state !== 'live' || input.pendingFrames > 0) return 0;
  if (input.quietFromMs === undefined || input.lastPokeAtMs === undefined) return 0;
  return Math.max(0, input.lastPokeAtMs - input.quietFromMs);
}

/**
 * Delay before a reconnect: at least `minMs` (the platform answers 422 while it rebalances right after a
 * disconnect, so no reconnect comes earlier, whatever ended the connection, a 422 included), plus full
 * jitter over a span that grows by `factor` per failed attempt, the whole never above `capMs`.
 * `capMs` here is the `backoff.capMs` setting clamped to `staleAfterMs` by the consumer (STATE-MACHINE.md, "Timing rules").
 */
export function reconnectDelay(
  attempt: number,
  options: Pick<StreamBackoffSettings, 'minMs' | 'baseMs' | 'factor'>,
  capMs: number,
  random: () => number,
): number {
  return backoffDelay(
    attempt + 1,
    { baseMs: options.baseMs, capMs, factor: options.factor, minMs: options.minMs },
    random,
  );
}

/**
 * Delay before reconnecting after the `attempt`-th 429 in a row (0-based): half-jittered exponential
 * growth from `rateLimitedBaseMs` to `rateLimitedCapMs`, never below `minMs`, and at least the
 * server's `Retry-After`. Not clamped to `staleAfterMs`: a 429 refuses for the hour's budget, and every
 * early reconnect would spend more of it.
 */
export function rateLimitedDelay(
  attempt: number,
  options: Pick<StreamBackoffSettings, 'minMs' | 'factor' | 'rateLimitedBaseMs' | 'rateLimitedCapMs'>,
  random: () => number,
  retryAfterMs: number | undefined,
): number {
  const delay = backoffDelay(
    attempt + 1,
    {
      baseMs: options.rateLimitedBaseMs,
      capMs: Math.max(options.rateLimitedCapMs, options.minMs),
      factor: options.factor,
      minMs: options.minMs,
      jitter: 0.5,
    },
    random,
  );
  return Math.max(delay, retryAfterMs ?? 0);
}

/**
 * Delay before retrying, for the `attempt`-th time in a row (0-based), a commit that failed: half-jittered
 * growth from `baseMs` to `commitRetryMaxMs` (an outage of the database is waited out, not hammered).
 */
export function holdDelay(
  attempt: number,
  options: Pick<StreamBackoffSettings, 'baseMs' | 'factor'>,
  commitRetryMaxMs: number,
  random: () => number,
): number {
  return backoffDelay(
    attempt + 1,
    { baseMs: options.baseMs, capMs: Math.max(commitRetryMaxMs, 1), factor: options.factor, jitter: 0.5 },
    random,
  );
}

/** Pause before reconnecting after the `round`-th idle drop (0-based): the last listed delay repeats. */
export function idleDelay(round: number, delaysMs: number[]): number {
  if (delaysMs.length === 0) return 0;
  return delaysMs[Math.min(round, delaysMs.length - 1)] ?? 0;
}

/** The reconnect delay of the next attempt (and counts the attempt). */
export function nextBackoff(s: MachineState, jitter: number): number {
  const { backoff, staleAfterMs } = s.options;
  // Never longer than a silent connection is tolerated (STATE-MACHINE.md, "Timing rules").
  const delay = reconnectDelay(s.attempt, backoff, Math.min(backoff.capMs, staleAfterMs), () => jitter);
  s.attempt += 1;
  return delay;
}

/** Waits `delayMs` in `backing_off`, then goes `then`. */
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
