/**
 * When to retry and how long to wait. Pure functions, so the back-off maths is tested without HTTP.
 */

export interface BackoffOptions {
  /** First back-off step in ms (default 500). */
  baseMs?: number;
  /** Largest single wait in ms (default 60 s). */
  capMs?: number;
  /** Source of randomness in [0, 1) (injected by tests). */
  random?: () => number;
}

/**
 * Exponential back-off with full jitter (AWS architecture blog): a uniform wait in
 * [0, min(cap, base·2^(attempt-1))]. Full jitter spreads a fleet's retries so they do not arrive together.
 * `attempt` is 1 for the first retry.
 */
export function backoffDelayMs(attempt: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? 500;
  const cap = options.capMs ?? 60_000;
  const random = options.random ?? Math.random;
  const ceiling = Math.min(cap, base * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
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

/** Error codes of undici and Node that mean the connection failed or was cut: worth another attempt. */
const RETRYABLE_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_RESPONSE_STATUS_CODE',
]);

/** True for a network-level failure (reset, refused, timeout, socket closed, body cut). */
export function isRetryableNetworkError(err: unknown): boolean {
  let current: unknown = err;
  // Walk the cause chain: undici and fetch wrap the socket error.
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && RETRYABLE_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Failures that prove the request never reached the server (safe to repeat even a POST). */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export function isNotSentError(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Statuses worth retrying: 429 and every 5xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
