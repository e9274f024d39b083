/**
 * A non-2xx answer: method, redacted URL, status, a redacted body excerpt, the messages of the body,
 * whether a retry may help (429, 5xx, the stream-rebalancing 422) and the wait the server asked for
 * (`Retry-After`), if any. `PermanentHttpError` carries the same fields for 4xx that must not be retried.
 */
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { SyncError } from './sync-error.ts';

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
