/**
 * Exponential back-off with full jitter (AWS architecture blog): a uniform delay in [0, cap) where the
 * cap grows by `factor` per attempt up to `maxMs`. Full jitter spreads reconnects of several workers
 * (and of the platform's 3 connections per stream) so they do not hit a rebalancing stream together.
 */
import type { BackoffOptions } from './types.ts';

/** Delay before attempt `attempt + 1` (attempt 0 is the first retry). `random` is uniform in [0, 1). */
export function backoffDelay(
  attempt: number,
  options: Pick<BackoffOptions, 'initialMs' | 'maxMs' | 'factor'>,
  random: () => number,
): number {
  const cap = Math.min(options.maxMs, options.initialMs * options.factor ** Math.max(0, attempt));
  return Math.floor(random() * cap);
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
  const min = Math.max(0, Math.min(options.minMs, capMs));
  const span = Math.min(capMs - min, options.initialMs * options.factor ** Math.max(0, attempt));
  return min + Math.floor(random() * Math.max(0, span));
}

/** Pause before reconnecting after the `round`-th idle drop (0-based): the last listed delay repeats. */
export function idleDelay(round: number, delaysMs: number[]): number {
  if (delaysMs.length === 0) return 0;
  return delaysMs[Math.min(round, delaysMs.length - 1)] ?? 0;
}
