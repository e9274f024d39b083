/** A 2xx whose body was cut short or is not the JSON it should be (retried; thrown after the last try). */
import { SyncError } from './sync-error.ts';

export class ResponseBodyError extends SyncError {
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
    super(`${method} ${redactedUrl} answered ${status} with an unreadable body: ${reason}`, options);
    this.method = method;
    this.url = redactedUrl;
    this.status = status;
  }
}
