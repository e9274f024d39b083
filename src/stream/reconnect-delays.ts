/**
 * The SSE consumer's waits, in its own option names (`StreamBackoffSettings` of types.ts), on top of the one
 * back-off formula of src/time/backoff-delay.ts.
 */

import type { StreamBackoffSettings } from '../config/stream-options.ts';
import { backoffDelay } from '../time/backoff-delay.ts';

/**
 * Delay before a reconnect: at least `minMs` (the platform answers 422 while it rebalances right after a
 * disconnect, so no reconnect comes earlier, whatever ended the connection, a 422 included), plus full
 * jitter over a span that grows by `factor` per failed attempt, the whole never above `capMs`.
 * `capMs` is `maxMs` clamped to `staleAfterMs` by the consumer (STATE-MACHINE.md, "Timing rules").
 */
export function reconnectDelay(
  attempt: number,
  options: Pick<StreamBackoffSettings, 'minMs' | 'initialMs' | 'factor'>,
  capMs: number,
  random: () => number,
): number {
  return backoffDelay(
    attempt + 1,
    { baseMs: options.initialMs, capMs, factor: options.factor, minMs: options.minMs },
    random,
  );
}

/**
 * Delay before reconnecting after the `attempt`-th 429 in a row (0-based): half-jittered exponential
 * growth from `rateLimitedInitialMs` to `rateLimitedMaxMs`, never below `minMs`, and at least the
 * server's `Retry-After`. Not clamped to `staleAfterMs`: a 429 refuses for the hour's budget, and every
 * early reconnect would spend more of it.
 */
export function rateLimitedDelay(
  attempt: number,
  options: Pick<StreamBackoffSettings, 'minMs' | 'factor' | 'rateLimitedInitialMs' | 'rateLimitedMaxMs'>,
  random: () => number,
  retryAfterMs: number | undefined,
): number {
  const delay = backoffDelay(
    attempt + 1,
    {
      baseMs: options.rateLimitedInitialMs,
      capMs: Math.max(options.rateLimitedMaxMs, options.minMs),
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
 * growth from `initialMs` to `commitRetryMaxMs` (an outage of the database is waited out, not hammered).
 */
export function holdDelay(
  attempt: number,
  options: Pick<StreamBackoffSettings, 'initialMs' | 'factor'>,
  commitRetryMaxMs: number,
  random: () => number,
): number {
  return backoffDelay(
    attempt + 1,
    { baseMs: options.initialMs, capMs: Math.max(commitRetryMaxMs, 1), factor: options.factor, jitter: 0.5 },
    random,
  );
}

/** Pause before reconnecting after the `round`-th idle drop (0-based): the last listed delay repeats. */
export function idleDelay(round: number, delaysMs: number[]): number {
  if (delaysMs.length === 0) return 0;
  return delaysMs[Math.min(round, delaysMs.length - 1)] ?? 0;
}
