/**
 * A 4xx that must not be retried. It has to be both "an HTTP answer with a status" and a
 * `PermanentError` (jobs and the queue test `instanceof PermanentError`), so it extends `PermanentError`
 * and carries the fields of `HttpError`, built by the same `httpAnswer`.
 */
import { type HttpAnswerFields, type HttpErrorDetails, httpAnswer } from './http-error.ts';
import { PermanentError } from './permanent-error.ts';

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
