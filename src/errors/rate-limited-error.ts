/** A 429: an `HttpError` with the wait the server asked for (`retryAfterMs`), if any. */
import { HttpError, type HttpErrorDetails } from './http-error.ts';

export class RateLimitedError extends HttpError {
  constructor(
    details: HttpErrorDetails,
    retryAfterMs: number | undefined,
    options: { cause?: unknown } = {},
  ) {
    super({ ...details, retryAfterMs }, options);
  }
}
