/**
 * The one HTTP client of validic-sync (undici 8): pooled keep-alive connections, timeouts, the request
 * budget, retries with back-off, bounded bodies, typed errors with redacted URLs.
 * Why and how: README.md, "`http-client.ts`".
 */
import { type Dispatcher, EnvHttpProxyAgent } from 'undici';
import { silentLogger } from '../log/logger.ts';
import { redactUrl } from '../redact/redact-secrets.ts';
import { secretValuesOf } from '../redact/url-secret-values.ts';
import { USER_AGENT } from '../runtime/version.ts';
import { abortReason, systemClock } from '../time/clock.ts';
import { errorFromResponse } from './error-from-response.ts';
import { asHttpFailure, createExchange, createReporter, type ExchangeResult } from './exchange.ts';
import type {
  EventStreamOptions,
  EventStreamResponse,
  HttpClient,
  HttpClientOptions,
  RequestOptions,
  WriteMethod,
} from './http-client-types.ts';
import type { RequestBudget } from './request-budget-types.ts';
import { createJsonRequest } from './request-json.ts';
import { DEFAULT_MAX_BODY_BYTES } from './response-body.ts';

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
      try {
        exchanged = await exchange('GET', startUrl, {
          body: undefined,
          headers,
          signal: opts.signal,
          budget: budgetFor(opts.budgetKey),
          attempt: 1,
          bodyTimeout: opts.bodyTimeoutMs ?? 0,
        });
      } catch (err) {
        if (opts.signal?.aborted) throw abortReason(opts.signal);
        throw asHttpFailure(err, 'GET', startUrl);
      }
      const { res, url, startedAt } = exchanged;
      const durationMs = clock.now() - startedAt;
      report({ method: 'GET', host: url.host, status: res.statusCode, durationMs, attempt: 1 }, url);
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
      throw await errorFromResponse('GET', redactUrl(url), res, clock.now(), secretValuesOf(startUrl), true);
    },
    async close(): Promise<void> {
      await ownAgent?.close();
    },
  };
}
