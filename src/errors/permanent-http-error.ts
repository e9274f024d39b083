/**
 * A 4xx that must not be retried. It has to be both "an HTTP answer with a status" and a
 * `PermanentError` (jobs and the queue test `instanceof PermanentError`), so it extends `PermanentError`
 * and carries the fields of `HttpError` (built by the same `httpAnswer`).
 */
import { type HttpAnswerFields, type HttpErrorDetails, httpAnswer } from './http-error.ts';
import { PermanentError } from './permanent-error.ts';

export class PermanentHttpError extends PermanentError implements HttpAnswerFields {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly bodyExcerpt: string;
  readonly messages: string[];
  readonly retryable = false;
  constructor(details: Omit<HttpErrorDetails, 'retryable'>, options: { cause?: unknown } = {}) {
    const { message, fields } = httpAnswer(details);
    super(message, options);
    this.method = fields.method;
    this.url = fields.url;
    this.status = fields.status;
    this.bodyExcerpt = fields.bodyExcerpt;
    this.messages = fields.messages;
  }
}
