/**
 * One HTTP exchange: take a budget token, send, and follow allowed redirects. GET follows up to
 * `maxRedirects` redirects to the SAME origin (scheme, host, port); a redirect to any other origin is
 * refused with `RedirectRefusedError`, because the token rides in the URL and must never reach another
 * host. Writes (POST/PUT/DELETE) follow no redirect at all. Every hop takes its own budget token and is
 * reported to the `onRequest` hook.
 */
import { type Dispatcher, request } from 'undici';
import { errorCodeOf, NetworkError, RedirectRefusedError, SyncError } from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import { redactUrl } from '../redact/redact-secrets.ts';
import { secretValuesOf } from '../redact/url-secret-values.ts';
import { abortReason, type Clock } from '../time/clock.ts';
import { endpointKind } from './endpoint-kind.ts';
import type { RequestEvent } from './http-client-types.ts';
import type { RequestBudget } from './request-budget-types.ts';
import { discardBody, headerValue } from './response-body.ts';

export type ReportRequest = (event: RequestEvent, url: URL) => void;

/** Reports an attempt to the `onRequest` hook (a throwing hook is logged, not fatal) and the debug log. */
export function createReporter(
  onRequest: ((event: RequestEvent) => void) | undefined,
  log: Logger,
): ReportRequest {
  return (event, url) => {
    try {
      onRequest?.({ ...event, endpoint: endpointKind(url) });
    } catch (err) {
      log.warn({ err }, 'onRequest hook threw');
    }
    log.debug({ ...event, url: redactUrl(url) }, 'http request');
  };
}

/** The `error` label of a failed attempt: the error code along the cause chain, else the error's name. */
export function requestErrorLabel(err: unknown): string | undefined {
  return errorCodeOf(err) ?? (err instanceof Error ? err.name : undefined);
}

/** Our errors pass as they are; anything else (a socket error, a TLS setting) becomes a `NetworkError`. */
export function asHttpFailure(err: unknown, method: string, url: URL): Error {
  if (err instanceof SyncError) return err;
  return new NetworkError(method, redactUrl(url), err, secretValuesOf(url));
}

export interface ExchangeInit {
  body: string | undefined;
  headers: Record<string, string>;
  signal: AbortSignal | undefined;
  budget: RequestBudget | undefined;
  attempt: number;
  bodyTimeout: number;
}

export interface ExchangeResult {
  res: Dispatcher.ResponseData;
  url: URL;
  startedAt: number;
}

export type Exchange = (method: string, startUrl: URL, init: ExchangeInit) => Promise<ExchangeResult>;

export function createExchange(deps: {
  dispatcher: Dispatcher;
  clock: Clock;
  headersTimeout: number;
  maxRedirects: number;
  report: ReportRequest;
}): Exchange {
  const { dispatcher, clock, report } = deps;
  return async function exchange(method, startUrl, init) {
    let url = startUrl;
    for (let hop = 0; ; hop++) {
      await init.budget?.take(init.signal);
      const startedAt = clock.now();
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, {
          dispatcher,
          method: method as Dispatcher.HttpMethod,
          headers: init.headers,
          body: init.body,
          signal: init.signal,
          headersTimeout: deps.headersTimeout,
          bodyTimeout: init.bodyTimeout,
        });
      } catch (err) {
        if (init.signal?.aborted) throw abortReason(init.signal);
        const durationMs = clock.now() - startedAt;
        const error = requestErrorLabel(err);
        report({ method, host: url.host, status: 0, durationMs, attempt: init.attempt, error }, url);
        throw err;
      }
      if (res.statusCode < 300 || res.statusCode >= 400) return { res, url, startedAt };
      // 3xx: follow only same-origin GET redirects (see header comment).
      const durationMs = clock.now() - startedAt;
      report({ method, host: url.host, status: res.statusCode, durationMs, attempt: init.attempt }, url);
      await discardBody(res);
      url = redirectTarget(method, url, res, hop, deps.maxRedirects);
    }
  };
}

function redirectTarget(
  method: string,
  url: URL,
  res: Dispatcher.ResponseData,
  hop: number,
  maxRedirects: number,
): URL {
  const refuse = (reason: string) => new RedirectRefusedError(method, redactUrl(url), res.statusCode, reason);
  const location = headerValue(res.headers.location);
  if (!location) throw refuse('no Location header');
  let target: URL;
  try {
    target = new URL(location, url);
  } catch {
    throw refuse('unreadable Location header');
  }
  if (target.origin !== url.origin) throw refuse(`target ${target.origin} is another origin`);
  if (method !== 'GET') throw refuse('writes are not redirected');
  if (hop >= maxRedirects) throw refuse('too many redirects');
  return target;
}
