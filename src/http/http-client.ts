/**
 * The HTTP client of the platform: undici with keep-alive, one exchange per hop (a budget token each,
 * same-origin redirects, the onRequest hook, redacted debug logs), and the retry loop of getJson /
 * sendJson deciding by classifyFailure.
 */
import { type Dispatcher, EnvHttpProxyAgent, request } from 'undici';
import {
  BodyTooLargeError,
  classifyFailure,
  errorCodeOf,
  hasErrorCode,
  NetworkError,
  RateLimitedError,
  RedirectRefusedError,
  ResponseBodyError,
  SyncError,
  UNRESOLVED_HOST_CODES,
} from '../errors/index.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { parseJsonExactly } from '../pipeline/exact-json.ts';
import { redactUrl } from '../redact/redact-secrets.ts';
import { secretValuesOf } from '../redact/url-secret-values.ts';
import { USER_AGENT } from '../runtime/version.ts';
import { abortReason, type Clock, systemClock } from '../time/clock.ts';
import type { PlatformClock } from '../time/platform-clock.ts';
import type {
  BudgetTicket,
  EventStreamOptions,
  EventStreamResponse,
  HttpClient,
  HttpClientOptions,
  RequestBudget,
  RequestEvent,
  RequestOptions,
  WriteMethod,
} from './http-client-types.ts';
import { endpointKind } from './http-client-types.ts';
import {
  DEFAULT_MAX_BODY_BYTES,
  discardBody,
  errorFromResponse,
  headerValue,
  readBody,
} from './responses.ts';
import { httpRetryDelayMs, isNotSentError } from './retry-policy.ts';

/**
 * The one HTTP client of validic-sync (undici 8): pooled keep-alive connections, timeouts, the request
 * budget, retries with back-off, bounded bodies, typed errors with redacted URLs.
 *
 * Why our own retry loop rather than undici's `interceptors.retry` / `RetryHandler`: those retry only
 * until the response body starts flowing (they resume a cut body with a `Range` request, which this
 * platform does not serve), they cannot retry a 200 whose JSON turns out cut or unparseable, and every
 * attempt must first take a token from the request budget (the platform counts attempts, not calls).
 * So the loop in `http-client.ts` owns attempts; undici owns connections and timeouts.
 *
 * The parts: http-client-types.ts (options and interface), exchange.ts (one exchange, budget and
 * redirects), request-json.ts (the retry loop), response-body.ts (bounded bodies),
 * error-from-response.ts (typed errors of non-2xx answers).
 */
export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  const headersTimeout = options.headersTimeoutMs ?? 30_000;
  const bodyTimeout = options.bodyTimeoutMs ?? 60_000;
  // HTTPS_PROXY / HTTP_PROXY / NO_PROXY (either case) are honoured, as users of any HTTP tool expect.
  // Always through a CONNECT tunnel: a forwarding proxy would see, and likely log, the token in the URL.
  const ownAgent = options.dispatcher
    ? undefined
    : new EnvHttpProxyAgent({
        proxyTunnel: true,
        connect: { timeout: options.connectTimeoutMs ?? 10_000 },
        headersTimeout,
        bodyTimeout,
        keepAliveTimeout: options.keepAliveTimeoutMs ?? 30_000,
        connections: options.connectionsPerOrigin ?? 16,
      });
  const dispatcher: Dispatcher = options.dispatcher ?? ownAgent!;
  const clock = options.clock ?? systemClock;
  const log = options.logger ?? silentLogger;
  const userAgent = options.userAgent ?? USER_AGENT;

  const budgetFor = (key: string | undefined): RequestBudget | undefined =>
    key !== undefined && options.budgets ? options.budgets.forKey(key) : options.budget;
  const report = createReporter(options.onRequest, log);
  const exchange = createExchange({
    dispatcher,
    clock,
    platformClock: options.platformClock,
    headersTimeout,
    maxRedirects: options.maxRedirects ?? 5,
    report,
  });
  const requestJson = createJsonRequest({
    exchange,
    report,
    clock,
    log,
    maxAttempts: Math.max(1, options.maxAttempts ?? 6),
    maxRetryAfterMs: options.maxRetryAfterMs ?? 300_000,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    bodyTimeout,
    userAgent,
    backoff: options.backoff,
    budgetFor,
  });

  return {
    getJson<T>(url: string | URL, opts: RequestOptions = {}): Promise<T> {
      return requestJson<T>('GET', url, undefined, opts, false);
    },
    sendJson<T>(
      method: WriteMethod,
      url: string | URL,
      body: unknown,
      opts: RequestOptions = {},
    ): Promise<T> {
      return requestJson<T>(method, url, body, opts, true);
    },
    async openEventStream(input: string | URL, opts: EventStreamOptions = {}): Promise<EventStreamResponse> {
      const startUrl = typeof input === 'string' ? new URL(input) : input;
      const headers: Record<string, string> = {
        accept: 'text/event-stream',
        'cache-control': 'no-cache',
        'user-agent': userAgent,
        ...opts.headers,
      };
      let exchanged: ExchangeResult;
      const budget = budgetFor(opts.budgetKey);
      try {
        exchanged = await exchange('GET', startUrl, {
          body: undefined,
          headers,
          signal: opts.signal,
          budget,
          attempt: 1,
          bodyTimeout: opts.bodyTimeoutMs ?? 0,
        });
      } catch (err) {
        if (opts.signal?.aborted) throw abortReason(opts.signal);
        throw asHttpFailure(err, 'GET', startUrl);
      }
      const { res, url, startedAt, ticket } = exchanged;
      const durationMs = clock.now() - startedAt;
      report({ method: 'GET', host: url.host, status: res.statusCode, durationMs, attempt: 1 }, url);
      if (res.statusCode !== 429 && res.statusCode < 500) budget?.succeeded();
      if (res.statusCode >= 200 && res.statusCode < 300) {
        return {
          status: res.statusCode,
          headers: res.headers,
          body: res.body,
          close: () => {
            res.body.destroy();
          },
        };
      }
      const error = await errorFromResponse(
        'GET',
        redactUrl(url),
        res,
        clock.now(),
        secretValuesOf(startUrl),
        true,
      );
      await reportRateLimited(budget, ticket, error, log);
      throw error;
    },
    async close(): Promise<void> {
      await ownAgent?.close();
    },
  };
}

/**
 * One HTTP exchange: take a budget token, send, and follow allowed redirects. GET follows up to
 * `maxRedirects` redirects to the SAME origin (scheme, host, port); a redirect to any other origin is
 * refused with `RedirectRefusedError`, because the token rides in the URL and must never reach another
 * host. Writes (POST/PUT/DELETE) follow no redirect at all. Every hop takes its own budget token and is
 * reported to the `onRequest` hook.
 */
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
  /**
   * The token of an attempt answered 429, which this retry sends on again instead of taking another (a
   * request spends one token however many 429s it meets); the first hop then only waits out a
   * `Retry-After` that holds the budget.
   */
  reuse?: BudgetTicket | undefined;
  attempt: number;
  bodyTimeout: number;
}

export interface ExchangeResult {
  res: Dispatcher.ResponseData;
  url: URL;
  startedAt: number;
  /** The budget token the answering hop was sent with (its epoch goes back with a 429). */
  ticket: BudgetTicket | undefined;
}

/**
 * Tells the budget that a request was answered 429 (lowering the fleet's rate, holding it for a
 * `Retry-After`). A budget that cannot be told (Redis away) must not hide the 429 itself: logged only.
 */
export async function reportRateLimited(
  budget: RequestBudget | undefined,
  ticket: BudgetTicket | undefined,
  error: unknown,
  log: Logger,
): Promise<void> {
  if (!budget || !ticket || !(error instanceof RateLimitedError)) return;
  try {
    await budget.rateLimited(ticket, error.retryAfterMs);
  } catch (err) {
    log.warn({ err, budget: budget.key }, 'could not lower the request budget after a 429');
  }
}

export type Exchange = (method: string, startUrl: URL, init: ExchangeInit) => Promise<ExchangeResult>;

export function createExchange(deps: {
  dispatcher: Dispatcher;
  clock: Clock;
  platformClock?: PlatformClock | undefined;
  headersTimeout: number;
  maxRedirects: number;
  report: ReportRequest;
}): Exchange {
  const { dispatcher, clock, report } = deps;
  return async function exchange(method, startUrl, init) {
    let url = startUrl;
    let ticket: BudgetTicket | undefined;
    for (let hop = 0; ; hop++) {
      if (hop === 0 && init.reuse) {
        ticket = init.reuse;
        await init.budget?.ready(init.signal);
      } else ticket = await init.budget?.take(init.signal);
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
      deps.platformClock?.observeDateHeader(res.headers.date, startedAt, clock.now());
      if (res.statusCode < 300 || res.statusCode >= 400) return { res, url, startedAt, ticket };
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

/**
 * The retry loop of `getJson` / `sendJson`: one exchange per attempt (each takes a budget token), the
 * body read whole and parsed, and `classifyFailure` (src/errors/classify-failure.ts) deciding what a
 * failure means. Retried in process: `rate-limited` (after `Retry-After`, or back-off when it is absent;
 * a `Retry-After` above `maxRetryAfterMs` is thrown at once for the queue to reschedule), `outage` and
 * `retry` (5xx, socket errors, cut or unparseable 2xx bodies). `permanent` and `unknown` are thrown at
 * once. A non-idempotent request (POST) is retried only when the platform cannot have acted on it (429,
 * refused connection, connect timeout), so a stream is never created twice.
 */

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

/** One attempt's exchange settings, and the token it was answered 429 on (set by the attempt). */
interface AttemptInit extends ExchangeInit {
  ticket?: BudgetTicket | undefined;
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
    init: AttemptInit,
    emptyIsValid: boolean,
  ): Promise<T> {
    const { res, url, startedAt, ticket } = await deps.exchange(method, startUrl, init);
    const { attempt } = init;
    if (res.statusCode === 429) init.ticket = ticket;
    else if (res.statusCode < 500) init.budget?.succeeded();
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
      const error = await errorFromResponse(method, redacted, res, clock.now(), secretValuesOf(startUrl));
      await reportRateLimited(init.budget, ticket, error, deps.log);
      throw error;
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
      // Numbers exactly as sent: records are stored as the platform sent them (src/pipeline/exact-json.ts).
      parsed = parseJsonExactly(text) as T;
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
    // The token of the last attempt answered 429: the next attempt is sent on it (see ExchangeInit.reuse).
    let refused: BudgetTicket | undefined;
    for (let attempt = 1; attempt <= deps.maxAttempts; attempt++) {
      const init: AttemptInit = {
        body: payload,
        headers,
        signal: opts.signal,
        budget,
        reuse: refused,
        attempt,
        bodyTimeout: deps.bodyTimeout,
      };
      try {
        return await attemptOnce<T>(method, startUrl, init, emptyIsValid);
      } catch (err) {
        if (opts.signal?.aborted) throw abortReason(opts.signal);
        refused = init.ticket;
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
