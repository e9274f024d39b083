/**
 * The SSE consumer's waits, in its own option names (`BackoffOptions` of types.ts), on top of the one
 * back-off formula of src/time/backoff-delay.ts.
 */
import { backoffDelay } from '../time/backoff-delay.ts';
import type { BackoffOptions } from './types.ts';

/** Delay before commit attempt `attempt + 1` (attempt 0 is the first retry). `random` is uniform in [0, 1). */
export function commitRetryDelay(
  attempt: number,
  options: Pick<BackoffOptions, 'initialMs' | 'maxMs' | 'factor'>,
  random: () => number,
): number {
  return backoffDelay(
    attempt + 1,
    { baseMs: options.initialMs, capMs: options.maxMs, factor: options.factor },
    random,
  );
}

/**
 * Delay before a reconnect: at least `minMs` (the platform answers 422 while it rebalances right after a
 * disconnect, so no reconnect comes earlier, whatever ended the connection, a 422 included), plus full
 * jitter over a span that grows by `factor` per failed attempt, the whole never above `capMs`.
 * `capMs` is `maxMs` clamped to `staleAfterMs` by the consumer (STATE-MACHINE.md, "Timing rules").
 */
export function reconnectDelay(
  attempt: number,
  options: Pick<BackoffOptions, 'minMs' | 'initialMs' | 'factor'>,
  capMs: number,
  random: () => number,
): number {
  return backoffDelay(
    attempt + 1,
    { baseMs: options.initialMs, capMs, factor: options.factor, minMs: options.minMs },
    random,
  );
}

/** Pause before reconnecting after the `round`-th idle drop (0-based): the last listed delay repeats. */
export function idleDelay(round: number, delaysMs: number[]): number {
  if (delaysMs.length === 0) return 0;
  return delaysMs[Math.min(round, delaysMs.length - 1)] ?? 0;
}
