/**
 * The few error classes of validic-sync. Every one carries context a user can act on, never a secret
 * (URLs and bodies pass through redaction), and keeps the original error as `cause`.
 *
 * - `ConfigError`: bad or missing setting; the CLI prints it and exits 2.
 * - `UsageError`: bad command-line input; exit 2.
 * - `HttpError`: a non-2xx answer; `retryable` tells the retry loop what to do.
 * - `RateLimitedError`: a 429 (an `HttpError`), with the wait the server asked for, if any.
 * - `PermanentError`: do not retry (4xx other than 429 and the stream-rebalancing 422); the queue maps
 *   it to BullMQ's `UnrecoverableError`.
 * - `UserFacingError`: an expected failure (database unreachable, stream limit reached): the CLI prints
 *   its message without a stack trace and exits 1.
 */
import { redactKnownSecrets } from './redact/redact-secrets.ts';

export class UserFacingError extends Error {
  /** What the user can do about it, printed after the message. */
  readonly fix: string | undefined;
  constructor(message: string, options: { fix?: string; cause?: unknown } = {}) {
    super(redactKnownSecrets(message), { cause: options.cause });
    this.name = 'UserFacingError';
    this.fix = options.fix;
  }
}

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
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export class UsageError extends UserFacingError {
  constructor(message: string, fix?: string) {
    super(message, fix ? { fix } : {});
    this.name = 'UsageError';
  }
}

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
}

export class HttpError extends Error {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly bodyExcerpt: string;
  readonly messages: string[];
  readonly retryable: boolean;
  constructor(details: HttpErrorDetails, options: { cause?: unknown } = {}) {
    const detail = details.messages.length ? `: ${details.messages.join('; ')}` : '';
    super(
      redactKnownSecrets(`${details.method} ${details.url} answered ${details.status}${detail}`),
      options,
    );
    this.name = 'HttpError';
    this.method = details.method;
    this.url = redactKnownSecrets(details.url);
    this.status = details.status;
    this.bodyExcerpt = redactKnownSecrets(details.bodyExcerpt);
    this.messages = details.messages.map(redactKnownSecrets);
    this.retryable = details.retryable;
  }
}

export class RateLimitedError extends HttpError {
  /** Milliseconds the server asked us to wait (`Retry-After`), when it said. */
  readonly retryAfterMs: number | undefined;
  constructor(
    details: HttpErrorDetails,
    retryAfterMs: number | undefined,
    options: { cause?: unknown } = {},
  ) {
    super(details, options);
    this.name = 'RateLimitedError';
    this.retryAfterMs = retryAfterMs;
  }
}

export class PermanentError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(redactKnownSecrets(message), options);
    this.name = 'PermanentError';
  }
}

/** Wraps any thrown value into an Error, so `cause` chains and logs always see an Error. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(typeof value === 'string' ? value : JSON.stringify(value));
}
