/** The typed error of a non-2xx answer (src/errors/), with a bounded, redacted excerpt of its body. */
import type { Dispatcher } from 'undici';
import { HttpError, PermanentHttpError, RateLimitedError, StreamRebalancingError } from '../errors/index.ts';
import { maskSecrets } from '../redact/url-secret-values.ts';
import { bodyExcerpt, extractErrorMessages } from './error-body.ts';
import { readErrorBody } from './response-body.ts';
import { isRetryableStatus, parseRetryAfter } from './retry-policy.ts';

/** 429 → `RateLimitedError`, 422 on a stream → `StreamRebalancingError`, 5xx → `HttpError`, else permanent. */
export async function errorFromResponse(
  method: string,
  redactedUrl: string,
  res: Dispatcher.ResponseData,
  now: number,
  secrets: readonly string[],
  isStream = false,
): Promise<Error> {
  const text = maskSecrets(await readErrorBody(res), secrets);
  const details = {
    method,
    url: redactedUrl,
    status: res.statusCode,
    bodyExcerpt: bodyExcerpt(text),
    messages: extractErrorMessages(text),
  };
  if (res.statusCode === 429) {
    return new RateLimitedError(
      { ...details, retryable: true },
      parseRetryAfter(res.headers['retry-after'], now),
    );
  }
  if (isStream && res.statusCode === 422) return new StreamRebalancingError(details);
  if (isRetryableStatus(res.statusCode)) return new HttpError({ ...details, retryable: true });
  return new PermanentHttpError(details);
}
