/**
 * How the consumer treats a failed open of the stream or the replay. One small function on purpose:
 * the driver (stream-consumer.ts) calls it and hands its answer to the pure transition function
 * (next-consumer-state.ts), so a shared classifier can replace it without touching the machine.
 */

/** How an open failure is handled: 422 and transient errors back off; auth and `PermanentError` stop. */
export type OpenFailureKind = 'rebalancing' | 'retry' | 'permanent' | 'refused';

/**
 * 422 is rebalancing (retry). 401/403 are permanent (the token is wrong: stop). Any other error marked
 * non-retryable (a `PermanentError`, or an HTTP error with `retryable: false`) is `refused`: permanent
 * for the stream, and for replay "this gap cannot be replayed". Everything else is retried.
 */
export function classifyOpenFailure(error: unknown): OpenFailureKind {
  const e = (error ?? {}) as { status?: unknown; retryable?: unknown; name?: unknown };
  if (e.status === 422) return 'rebalancing';
  if (e.status === 401 || e.status === 403) return 'permanent';
  if (e.retryable === false) return 'refused';
  if (error instanceof Error && /PermanentError|PermanentHttpError/.test(String(e.name))) return 'refused';
  return 'retry';
}
