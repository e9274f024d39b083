/**
 * The retry loop of `getJson` / `sendJson`: one exchange per attempt (each takes a budget token), the
 * body read whole and parsed, and `classifyFailure` (src/errors/classify-failure.ts) deciding what a
 * failure means. Retried in process: `rate-limited` (after `Retry-After`, or back-off when it is absent;
 * a `Retry-After` above `maxRetryAfterMs` is thrown at once for the queue to reschedule), `outage` and
 * `retry` (5xx, socket errors, cut or unparseable 2xx bodies). `permanent` and `unknown` are thrown at
 * once. A non-idempotent request (POST) is retried only when the platform cannot have acted on it (429,
 * refused connection, connect timeout), so a stream is never created twice.
 */

import {
  BodyTooLargeError,
  classifyFailure,
  hasErrorCode,
  ResponseBodyError,
  UNRESOLVED_HOST_CODES,
} from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import { redactUrl } from '../redact/redact-secrets.ts';
import { secretValuesOf } from '../redact/url-secret-values.ts';
import { abortReason, type Clock } from '../time/clock.ts';
import { errorFromResponse } from './error-from-response.ts';
import { asHttpFailure, type Exchange, type ReportRequest, requestErrorLabel } from './exchange.ts';
import type { RequestOptions } from './http-client-types.ts';
import type { RequestBudget } from './request-budget-types.ts';
import { readBody } from './response-body.ts';
import { httpRetryDelayMs, isNotSentError } from './retry-policy.ts';

export interface JsonRequestDeps {
  exchange: Exchange;
  report: ReportRequest;
  clock: Clock;
  log: Logger;
  maxAttempts: number;
  maxRetryAfterMs: number;
  maxBodyBytes: number;
  bodyTimeout: number;
  userAgent: string;
  backoff: Parameters<typeof httpRetryDelayMs>[1] | undefined;
  budgetFor(key: string | undefined): RequestBudget | undefined;
}

export type JsonRequest = <T>(
  method: string,
  input: string | URL,
  body: unknown,
  opts: RequestOptions,
  emptyIsValid: boolean,
) => Promise<T>;

export function createJsonRequest(deps: JsonRequestDeps): JsonRequest {
  const { clock, report } = deps;

  /** One attempt: the answer parsed, or the typed error of a non-2xx or unreadable answer. */
  async function attemptOnce<T>(
    method: string,
    startUrl: URL,
    init: Parameters<Exchange>[2],
    emptyIsValid: boolean,
  ): Promise<T> {
    const { res, url, startedAt } = await deps.exchange(method, startUrl, init);
    const { attempt } = init;
    const redacted = redactUrl(url);
    const status = res.statusCode;
    const done = (error?: string) =>
      report(
        {
          method,
          host: url.host,
          status,
          durationMs: clock.now() - startedAt,
          attempt,
          ...(error ? { error } : {}),
        },
        url,
      );
    if (status < 200 || status >= 300) {
      done();
      throw await errorFromResponse(method, redacted, res, clock.now(), secretValuesOf(startUrl));
    }
    let text: string;
    try {
      text = await readBody(res, deps.maxBodyBytes, method, redacted);
    } catch (err) {
      if (init.signal?.aborted) throw abortReason(init.signal);
      if (err instanceof BodyTooLargeError) throw err;
      done(requestErrorLabel(err));
      if (err instanceof ResponseBodyError) throw err;
      const reason = `body cut off (${requestErrorLabel(err) ?? 'read error'})`;
      throw new ResponseBodyError(method, redacted, status, reason, { cause: err });
    }
    if (text.trim() === '' && (emptyIsValid || status === 204)) {
      done();
      return undefined as T;
    }
    let parsed: T;
    try {
      parsed = JSON.parse(text) as T;
    } catch (err) {
      // A 2xx with broken JSON is almost always a body cut mid-way by a proxy or reset: retry.
      done('INVALID_JSON');
      const reason = `invalid JSON (${text.length} chars read)`;
      throw new ResponseBodyError(method, redacted, status, reason, { cause: err });
    }
    done();
    return parsed;
  }

  return async function requestJson<T>(
    method: string,
    input: string | URL,
    body: unknown,
    opts: RequestOptions,
    emptyIsValid: boolean,
  ): Promise<T> {
    const startUrl = typeof input === 'string' ? new URL(input) : input;
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': deps.userAgent,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    };
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const budget = deps.budgetFor(opts.budgetKey);
    const idempotent = opts.idempotent ?? method !== 'POST';
    let lastError: unknown;
    for (let attempt = 1; attempt <= deps.maxAttempts; attempt++) {
      try {
        const init = {
          body: payload,
          headers,
          signal: opts.signal,
          budget,
          attempt,
          bodyTimeout: deps.bodyTimeout,
        };
        return await attemptOnce<T>(method, startUrl, init, emptyIsValid);
      } catch (err) {
        if (opts.signal?.aborted) throw abortReason(opts.signal);
        const failure = classifyFailure(err);
        lastError = asHttpFailure(err, method, startUrl);
        if (!idempotent && failure.kind !== 'rate-limited' && !isNotSentError(err)) throw lastError;
        if (failure.kind === 'permanent' || failure.kind === 'unknown') throw lastError;
        // A host name that does not resolve is a job runner's outage (a compose service not up yet), but
        // here it is most often a mistyped URL: fail at once with the message that names it.
        if (hasErrorCode(err, UNRESOLVED_HOST_CODES)) throw lastError;
        const asked = failure.kind === 'rate-limited' ? failure.retryAfterMs : undefined;
        if (asked !== undefined && asked > deps.maxRetryAfterMs) throw lastError;
        if (attempt === deps.maxAttempts) break;
        const waitMs = httpRetryDelayMs(attempt, deps.backoff, asked);
        deps.log.debug(
          { method, url: redactUrl(startUrl), attempt, waitMs, err: lastError },
          'http request failed, retrying',
        );
        await clock.sleep(waitMs, opts.signal);
      }
    }
    throw lastError;
  };
}
