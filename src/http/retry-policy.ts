/**
 * The HTTP client's retry settings and the HTTP-only rules on top of `classifyFailure`
 * (src/errors/classify-failure.ts): which statuses are retryable, when a POST may be repeated, how a
 * `Retry-After` is read. Pure functions, so they are tested without HTTP. The wait itself is the one
 * back-off formula of src/time/backoff-delay.ts.
 */
import { hasErrorCode, NOT_SENT_CODES } from '../errors/index.ts';
import { type BackoffOptions, backoffDelay } from '../time/backoff-delay.ts';

/** The HTTP client's back-off when the caller sets none: base 500 ms, cap 60 s, full jitter. */
export const HTTP_BACKOFF: BackoffOptions = { baseMs: 500, capMs: 60_000 };

/**
 * The HTTP client's wait before retry `attempt` (1 for the first retry): the server's `Retry-After`
 * when it gave one, else exponential back-off with full jitter in [0, min(cap, base·2^(attempt-1))].
 */
export function httpRetryDelayMs(
  attempt: number,
  options: Partial<BackoffOptions> & { random?: () => number } = {},
  retryAfterMs?: number,
): number {
  const { random, ...backoff } = options;
  return backoffDelay(attempt, { ...HTTP_BACKOFF, ...backoff }, random, retryAfterMs);
}

/**
 * Longest wait a `Retry-After` can impose: one hour, the window of the platform's request limit, so no
 * honest answer asks for more. Larger asks (a year, `1e400` seconds, a date far ahead) are read as this,
 * so a wrong or hostile header cannot park a job or a stream for longer. Waits above the HTTP client's
 * `maxRetryAfterMs` (5 min) are not slept in process but handed to the queue or the stream consumer.
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * `Retry-After` is either delta-seconds or an HTTP-date. Returns milliseconds to wait, within
 * [0, MAX_RETRY_AFTER_MS], or undefined when the header is absent or unreadable (then the caller backs
 * off exponentially).
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.min(MAX_RETRY_AFTER_MS, Math.round(Number(text) * 1000));
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - nowMs));
}

/** True when the failure proves the request never reached the server (safe to repeat even a POST). */
export function isNotSentError(err: unknown): boolean {
  return hasErrorCode(err, NOT_SENT_CODES);
}

/** Statuses worth retrying: 429 and every 5xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
