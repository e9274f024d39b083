/**
 * HTTP-specific errors on top of `src/errors.ts`. A non-retryable 4xx must be both "an HTTP answer with a
 * status" and a `PermanentError` (the queue maps `instanceof PermanentError` to BullMQ's
 * `UnrecoverableError`), so `PermanentHttpError` extends `PermanentError` and carries the same fields as
 * `HttpError`. Use `httpStatusOf(err)` to read the status of either.
 */
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { HttpError, type HttpErrorDetails, PermanentError } from '../errors.ts';
import { maskSecrets } from '../redact/url-secret-values.ts';

export class PermanentHttpError extends PermanentError {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly bodyExcerpt: string;
  readonly messages: string[];
  readonly retryable = false;
  constructor(details: Omit<HttpErrorDetails, 'retryable'>, options: { cause?: unknown } = {}) {
    // Build the message the same way HttpError does; PermanentError redacts it.
    const probe = new HttpError({ ...details, retryable: false });
    super(probe.message, options);
    this.name = 'PermanentHttpError';
    this.method = probe.method;
    this.url = probe.url;
    this.status = probe.status;
    this.bodyExcerpt = probe.bodyExcerpt;
    this.messages = probe.messages;
  }
}

/**
 * A 422 on a stream connect: the platform is rebalancing its 3 connections per stream after a fast
 * reconnect. Retry with back-off (the SSE state machine does), never treat it as permanent.
 */
export class StreamRebalancingError extends HttpError {
  constructor(details: Omit<HttpErrorDetails, 'retryable'>, options: { cause?: unknown } = {}) {
    super({ ...details, retryable: true }, options);
    this.name = 'StreamRebalancingError';
  }
}

/** The connection failed, timed out or was cut (after the last attempt). Retryable by a later job run. */
export class NetworkError extends Error {
  readonly method: string;
  readonly url: string;
  readonly code: string | undefined;
  readonly retryable = true;
  constructor(method: string, redactedUrl: string, cause: unknown, secrets: readonly string[] = []) {
    const code = errorCode(cause);
    const reason = maskSecrets(cause instanceof Error ? cause.message : String(cause), secrets);
    super(redactKnownSecrets(`${method} ${redactedUrl} failed: ${code ?? 'network error'} (${reason})`), {
      cause,
    });
    this.name = 'NetworkError';
    this.method = method;
    this.url = redactedUrl;
    this.code = code;
  }
}

/** A 2xx whose body was cut short or is not the JSON it should be (retried; thrown after the last try). */
export class ResponseBodyError extends Error {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly retryable = true;
  constructor(
    method: string,
    redactedUrl: string,
    status: number,
    reason: string,
    options: { cause?: unknown } = {},
  ) {
    super(
      redactKnownSecrets(`${method} ${redactedUrl} answered ${status} with an unreadable body: ${reason}`),
      options,
    );
    this.name = 'ResponseBodyError';
    this.method = method;
    this.url = redactedUrl;
    this.status = status;
  }
}

/** A body larger than `maxBodyBytes`: refused, not retried (it would be as large next time). */
export class BodyTooLargeError extends PermanentError {
  readonly url: string;
  readonly limitBytes: number;
  constructor(method: string, redactedUrl: string, limitBytes: number) {
    super(
      `${method} ${redactedUrl} answered with a body larger than ${limitBytes} bytes; ` +
        'raise the HTTP client option maxBodyBytes or ask for smaller pages (lower limit, shorter date windows)',
    );
    this.name = 'BodyTooLargeError';
    this.url = redactedUrl;
    this.limitBytes = limitBytes;
  }
}

/** A redirect to another host (or too many hops): refused so the token in the URL never leaks. */
export class RedirectRefusedError extends PermanentError {
  readonly status: number;
  constructor(method: string, redactedUrl: string, status: number, reason: string) {
    super(`${method} ${redactedUrl} answered ${status} redirect, refused: ${reason}`);
    this.name = 'RedirectRefusedError';
    this.status = status;
  }
}

/** The HTTP status carried by any of our HTTP errors, else undefined. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof HttpError || err instanceof PermanentHttpError || err instanceof RedirectRefusedError) {
    return err.status;
  }
  if (err instanceof ResponseBodyError) return err.status;
  return undefined;
}

function errorCode(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
