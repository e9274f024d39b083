/**
 * Exponential back-off with full jitter (AWS architecture blog): a uniform delay in [0, cap) where the
 * cap grows by `factor` per attempt up to `maxMs`. Full jitter spreads reconnects of several workers
 * (and of the platform's 3 connections per stream) so they do not hit a rebalancing stream together.
 */
import type { BackoffOptions } from './types.ts';

/** Delay before attempt `attempt + 1` (attempt 0 is the first retry). `random` is uniform in [0, 1). */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number): number {
  const cap = Math.min(options.maxMs, options.initialMs * options.factor ** Math.max(0, attempt));
  return Math.floor(random() * cap);
}

/** Pause before reconnecting after the `round`-th idle drop (0-based): the last listed delay repeats. */
export function idleDelay(round: number, delaysMs: number[]): number {
  if (delaysMs.length === 0) return 0;
  return delaysMs[Math.min(round, delaysMs.length - 1)] ?? 0;
}
