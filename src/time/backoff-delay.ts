/**
 * The one back-off formula of validic-sync: exponential growth from `baseMs`, capped, with jitter, and a
 * server's `Retry-After` honoured over it. Used by the HTTP retry loop, the SSE consumer's reconnects
 * and commit retries, the pipelined stream commit, the inline job runner and the Redis reconnects.
 *
 * Full jitter (the default, AWS architecture blog) draws a uniform wait in [0, ceiling): it spreads a
 * fleet's retries (and the platform's 3 connections per stream) so they do not arrive together.
 */

export interface BackoffOptions {
  /** Ceiling of the first retry, ms. */
  baseMs: number;
  /** Largest single wait, ms, `minMs` included. */
  capMs: number;
  /** Growth of the ceiling per retry. Default 2. */
  factor?: number;
  /**
   * Share of the ceiling that is random, 0..1. Default 1 (full jitter: a wait in [0, ceiling)); 0 gives
   * the plain exponential ceiling (BullMQ's `exponential` back-off).
   */
  jitter?: number;
  /** Floor of every wait, ms (default 0); the jittered span comes on top, the whole within `capMs`. */
  minMs?: number;
}

/**
 * Wait before retry number `retry` (1 for the first retry). `retryAfterMs`, when the server gave one,
 * wins over the formula. `random` is uniform in [0, 1) (injected by tests).
 */
export function backoffDelay(
  retry: number,
  options: BackoffOptions,
  random: () => number = Math.random,
  retryAfterMs?: number,
): number {
  if (retryAfterMs !== undefined) return Math.max(0, retryAfterMs);
  const min = Math.max(0, Math.min(options.minMs ?? 0, options.capMs));
  const factor = options.factor ?? 2;
  const jitter = Math.min(1, Math.max(0, options.jitter ?? 1));
  const ceiling = Math.min(options.capMs - min, options.baseMs * factor ** Math.max(0, retry - 1));
  const span = Math.max(0, ceiling);
  return min + Math.floor(span * (1 - jitter) + random() * span * jitter);
}
