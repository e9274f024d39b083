/**
 * A 422 on a stream connect: the platform is rebalancing its 3 connections per stream after a fast
 * reconnect. Retry with back-off (the SSE state machine does), never treat it as permanent.
 */
import { HttpError, type HttpErrorDetails } from './http-error.ts';

export class StreamRebalancingError extends HttpError {
  constructor(details: Omit<HttpErrorDetails, 'retryable'>, options: { cause?: unknown } = {}) {
    super({ ...details, retryable: true }, options);
  }
}
