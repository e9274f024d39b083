/**
 * Every error class of validic-sync, base classes first. `SyncError` redacts known secrets from its
 * message; `UserFacingError` (config, usage) is printed without a stack; `PermanentError` is never retried;
 * `HttpError` carries the platform's answer. Why each exists: README.md.
 */
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { maskSecrets } from '../redact/url-secret-values.ts';
import { errorCodeOf } from './cause-chain.ts';

/**
 * The base of every error class of validic-sync. Its message is redacted once, here (the platform
 * token rides in URLs as `token=` / `access_token=`, and configured tokens are masked verbatim), so a
 * subclass passes its message as it is and never redacts again. `name` is the subclass's own name.
 */
export class SyncError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(redactKnownSecrets(message), options.cause === undefined ? {} : { cause: options.cause });
    this.name = new.target.name;
  }
}

/**
 * An expected failure (database unreachable, stream limit reached): the CLI prints its message and
 * `fix` without a stack trace and exits 1 (src/cli/command-runner.ts). Its subclasses `ConfigError` and
 * `UsageError` exit 2.
 */
export class UserFacingError extends SyncError {
  /** What the user can do about it, printed after the message. */
  readonly fix: string | undefined;
  constructor(message: string, options: { fix?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.fix = options.fix;
  }
}

/** Bad or missing settings, every problem at once: the CLI prints them and exits 2. */
export interface ConfigProblem {
  /** Setting path, e.g. `organizations[0].token`, with its env name when it has one. */
  key: string;
  message: string;
  fix: string;
}

export class ConfigError extends UserFacingError {
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[]) {
    super(
      `Invalid configuration:\n${problems.map((p) => `  - ${p.key}: ${p.message}. Fix: ${p.fix}`).join('\n')}`,
    );
    this.problems = problems;
  }
}

/** Bad command-line input: the CLI prints the message and the fix, and exits 2. */
export class UsageError extends UserFacingError {
  constructor(message: string, fix?: string) {
    super(message, fix ? { fix } : {});
  }
}

/**
 * Do not retry: the same call would fail the same way (a 4xx other than 429 and the stream-rebalancing
 * 422, an answer of a shape the platform never sends, an id that cannot go in a URL). `classifyFailure`
 * calls it `permanent`; the queue maps it to BullMQ's `UnrecoverableError`.
 */
export class PermanentError extends SyncError {}

/**
 * A non-2xx answer: method, redacted URL, status, a redacted body excerpt, the messages of the body,
 * whether a retry may help (429, 5xx, the stream-rebalancing 422) and the wait the server asked for
 * (`Retry-After`), if any. `PermanentHttpError` carries the same fields for 4xx that must not be retried.
 */
export interface HttpErrorDetails {
  method: string;
  /** Already redacted. */
  url: string;
  status: number;
  /** A short excerpt of the body, redacted. */
  bodyExcerpt: string;
  /** Messages pulled out of any of the platform's error-body shapes. */
  messages: string[];
  retryable: boolean;
  /** Milliseconds the server asked us to wait (`Retry-After`), when it said. */
  retryAfterMs?: number | undefined;
}

/** The fields every HTTP answer error carries, redacted. */
export interface HttpAnswerFields {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly bodyExcerpt: string;
  readonly messages: string[];
}

/** The message of an HTTP answer error (redacted by `SyncError`) and its redacted fields. */
export function httpAnswer(details: Omit<HttpErrorDetails, 'retryable'>): {
  message: string;
  fields: HttpAnswerFields;
} {
  const detail = details.messages.length ? `: ${details.messages.join('; ')}` : '';
  return {
    message: `${details.method} ${details.url} answered ${details.status}${detail}`,
    fields: {
      method: details.method,
      url: redactKnownSecrets(details.url),
      status: details.status,
      bodyExcerpt: redactKnownSecrets(details.bodyExcerpt),
      messages: details.messages.map(redactKnownSecrets),
    },
  };
}

export class HttpError extends SyncError implements HttpAnswerFields {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly bodyExcerpt: string;
  readonly messages: string[];
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(details: HttpErrorDetails, options: { cause?: unknown } = {}) {
    const { message, fields } = httpAnswer(details);
    super(message, options);
    this.method = fields.method;
    this.url = fields.url;
    this.status = fields.status;
    this.bodyExcerpt = fields.bodyExcerpt;
    this.messages = fields.messages;
    this.retryable = details.retryable;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/**
 * A 4xx that must not be retried. It has to be both "an HTTP answer with a status" and a
 * `PermanentError` (jobs and the queue test `instanceof PermanentError`), so it extends `PermanentError`
 * and carries the fields of `HttpError`, built by the same `httpAnswer`.
 */

// The constructor assigns every field of HttpAnswerFields (declaration merging).
export interface PermanentHttpError extends HttpAnswerFields {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor assigns every merged field.
export class PermanentHttpError extends PermanentError {
  readonly retryable = false;
  constructor(details: Omit<HttpErrorDetails, 'retryable'>, options: { cause?: unknown } = {}) {
    const { message, fields } = httpAnswer(details);
    super(message, options);
    Object.assign(this, fields);
  }
}

/** A 429: an `HttpError` with the wait the server asked for (`retryAfterMs`), if any. */
export class RateLimitedError extends HttpError {
  constructor(
    details: HttpErrorDetails,
    retryAfterMs: number | undefined,
    options: { cause?: unknown } = {},
  ) {
    super({ ...details, retryAfterMs }, options);
  }
}

/**
 * A 422 on a stream connect: the platform is rebalancing its 3 connections per stream after a fast
 * reconnect. Retry with back-off (the SSE state machine does), never treat it as permanent.
 */
export class StreamRebalancingError extends HttpError {
  constructor(details: Omit<HttpErrorDetails, 'retryable'>, options: { cause?: unknown } = {}) {
    super({ ...details, retryable: true }, options);
  }
}

/** A request that failed in a way a later try may not (retried; thrown after the last try). */
abstract class RetryableRequestError extends SyncError {
  readonly method: string;
  readonly url: string;
  readonly retryable = true;
  constructor(method: string, redactedUrl: string, what: string, options: { cause?: unknown } = {}) {
    super(`${method} ${redactedUrl} ${what}`, options);
    this.method = method;
    this.url = redactedUrl;
  }
}

/** The connection failed, timed out or was cut (after the last attempt). Retryable by a later job run. */
export class NetworkError extends RetryableRequestError {
  readonly code: string | undefined;
  constructor(method: string, redactedUrl: string, cause: unknown, secrets: readonly string[] = []) {
    const code = errorCodeOf(cause);
    const reason = maskSecrets(cause instanceof Error ? cause.message : String(cause), secrets);
    super(method, redactedUrl, `failed: ${code ?? 'network error'} (${reason})`, { cause });
    this.code = code;
  }
}

/** A 2xx whose body was cut short or is not the JSON it should be (retried; thrown after the last try). */
export class ResponseBodyError extends RetryableRequestError {
  readonly status: number;
  constructor(
    method: string,
    redactedUrl: string,
    status: number,
    reason: string,
    options: { cause?: unknown } = {},
  ) {
    super(method, redactedUrl, `answered ${status} with an unreadable body: ${reason}`, options);
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
    this.url = redactedUrl;
    this.limitBytes = limitBytes;
  }
}

/** A redirect to another host (or too many hops): refused so the token in the URL never leaks. */
export class RedirectRefusedError extends PermanentError {
  readonly status: number;
  constructor(method: string, redactedUrl: string, status: number, reason: string) {
    super(`${method} ${redactedUrl} answered ${status} redirect, refused: ${reason}`);
    this.status = status;
  }
}

/** The answer had a shape the platform never sends: not retried, it would be the same next time. */
export class UnexpectedResponseError extends PermanentError {
  constructor(what: string, detail: string) {
    super(
      `unexpected response from ${what}: ${detail}; check the configured base URL points at the platform`,
    );
  }
}

/**
 * An id that cannot be one URL path segment (src/validic/platform-limits.ts says why). A PermanentError:
 * the same id fails the same way again.
 */
export class UnsafePathSegmentError extends PermanentError {
  readonly segment: string;
  constructor(segment: string, problem: string) {
    super(`refused to put ${JSON.stringify(segment.slice(0, 80))} in a URL path: it ${problem}`);
    this.segment = segment;
  }
}

/**
 * A list the platform paged out did not prove complete: fewer records than its own count
 * (`summary.results`, `meta.total`), a page repeating what was read, or no end in sight. What was read is
 * real data and is kept; what depends on the WHOLE list (a cursor moving past it, a record or user
 * counted gone because the list left it out) must not happen. Retried like a 5xx: the next read of the
 * same list usually completes (a list shifting under an offset pager heals), and a server that always
 * cuts the list short fails the job visibly after its attempts.
 */
export interface ListingCounts {
  /** Distinct records (or users) read. */
  listed: number;
  /** What the server said the list holds, when it said. */
  total: number | undefined;
}

export class IncompleteListingError extends SyncError {
  /** Read by classifyFailure: retry, spending an attempt. */
  readonly retryable = true;
  readonly listed: number;
  readonly total: number | undefined;

  constructor(what: string, detail: string, counts: ListingCounts) {
    const of = counts.total === undefined ? '' : ` of ${counts.total}`;
    super(`incomplete listing from ${what}: read ${counts.listed}${of} (${detail})`);
    this.listed = counts.listed;
    this.total = counts.total;
  }
}

/** The HTTP status carried by any of our HTTP errors, else undefined. */
export function httpStatusOf(err: unknown): number | undefined {
  if (
    err instanceof HttpError ||
    err instanceof PermanentHttpError ||
    err instanceof RedirectRefusedError ||
    err instanceof ResponseBodyError
  ) {
    return err.status;
  }
  return undefined;
}

/** Wraps any thrown value into an Error, so `cause` chains and logs always see an Error. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(typeof value === 'string' ? value : JSON.stringify(value));
}
