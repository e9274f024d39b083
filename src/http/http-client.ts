/**
 * The one HTTP client of validic-sync (undici 8): pooled keep-alive connections, timeouts, the request
 * budget, retries with back-off, bounded bodies, typed errors with redacted URLs.
 *
 * Why our own retry loop rather than undici's `interceptors.retry` / `RetryHandler`: those retry only
 * until the response body starts flowing (they resume a cut body with a `Range` request, which this
 * platform does not serve), they cannot retry a 200 whose JSON turns out cut or unparseable, and every
 * attempt must first take a token from the request budget (the platform counts attempts, not calls).
 * So the loop below owns attempts; undici owns connections and timeouts.
 *
 * Redirects: GET requests follow up to `maxRedirects` redirects to the SAME origin (scheme, host, port);
 * a redirect to any other origin is refused with `RedirectRefusedError`, because the token rides in the
 * URL and must never reach another host. Writes (POST/PUT/DELETE) follow no redirect at all.
 */
import { type Dispatcher, EnvHttpProxyAgent, request } from 'undici';
import {
  BodyTooLargeError,
  HttpError,
  NetworkError,
  PermanentHttpError,
  RateLimitedError,
  RedirectRefusedError,
  ResponseBodyError,
  StreamRebalancingError,
} from '../errors/index.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { redactUrl } from '../redact/redact-secrets.ts';
import { maskSecrets, secretValuesOf } from '../redact/url-secret-values.ts';
import { USER_AGENT } from '../runtime/version.ts';
import { abortReason, type Clock, systemClock } from '../time/clock.ts';
import { type EndpointKind, endpointKind } from './endpoint-kind.ts';
import { bodyExcerpt, extractErrorMessages } from './error-body.ts';
import type { BudgetRegistry, RequestBudget } from './request-budget.ts';
import {
  type BackoffOptions,
  backoffDelayMs,
  isNotSentError,
  isRetryableNetworkError,
  isRetryableStatus,
  parseRetryAfter,
} from './retry-policy.ts';

/** What the `onRequest` hook sees for every attempt (metrics attach here). Never carries the URL. */
export interface RequestEvent {
  method: string;
  host: string;
  /** HTTP status, or 0 when no answer came (network error). */
  status: number;
  durationMs: number;
  /** 1 for the first try. */
  attempt: number;
  /** Error code when the attempt failed without an answer or with an unreadable body. */
  error?: string;
  /** Which kind of endpoint was asked (a bounded label; set by the client). */
  endpoint?: EndpointKind;
}

export interface HttpClientOptions {
  /**
   * Injected dispatcher (tests pass a MockAgent); default a keep-alive agent built from the options below,
   * which goes through the proxy that HTTPS_PROXY / HTTP_PROXY name unless NO_PROXY exempts the host.
   */
  dispatcher?: Dispatcher;
  /** TCP+TLS connect timeout, ms (default 10,000). */
  connectTimeoutMs?: number;
  /** Time to the response headers, ms (default 30,000). */
  headersTimeoutMs?: number;
  /** Longest silence between body chunks, ms (default 60,000). */
  bodyTimeoutMs?: number;
  /** Idle keep-alive socket lifetime, ms (default 30,000). */
  keepAliveTimeoutMs?: number;
  /** Connections per origin (default 16). */
  connectionsPerOrigin?: number;
  /** Tries per request including the first (default 6). */
  maxAttempts?: number;
  /** Back-off of retries without `Retry-After` (default base 500 ms, cap 60 s, full jitter). */
  backoff?: BackoffOptions;
  /**
   * Longest `Retry-After` waited in-process, ms (default 300,000). A longer ask is thrown at once as a
   * `RateLimitedError` carrying `retryAfterMs`, so the job queue reschedules instead of holding a worker.
   */
  maxRetryAfterMs?: number;
  /** Largest response body accepted, bytes (default `DEFAULT_MAX_BODY_BYTES`, 8 MiB). */
  maxBodyBytes?: number;
  /** Same-origin redirects followed by GET (default 5). */
  maxRedirects?: number;
  /** Budget taken before every attempt of requests without a `budgetKey`. */
  budget?: RequestBudget;
  /** Budgets looked up by a request's `budgetKey` (normally the API token; the registry hashes it). */
  budgets?: BudgetRegistry;
  clock?: Clock;
  logger?: Logger;
  onRequest?: (event: RequestEvent) => void;
  userAgent?: string;
}

export interface RequestOptions {
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Which budget paces this request (the API token; hashed before use). */
  budgetKey?: string;
  /**
   * Whether repeating the request is harmless (default: true for every method but POST). A
   * non-idempotent request is retried only when the platform cannot have acted on it (429, connection
   * refused, connect timeout); a 5xx or a cut answer is thrown at once, so a POST never runs twice.
   */
  idempotent?: boolean;
}

export interface EventStreamOptions extends RequestOptions {
  /** Body timeout of the stream, ms (default 0 = none: the SSE watchdog detects stale streams). */
  bodyTimeoutMs?: number;
}

export interface EventStreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Uint8Array>;
  /** Closes the connection (also happens when the request's signal aborts). */
  close(): void;
}

export type WriteMethod = 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface HttpClient {
  /** GET and parse JSON; retries 429, 5xx, network errors, cut or unparseable bodies. */
  getJson<T = unknown>(url: string | URL, options?: RequestOptions): Promise<T>;
  /**
   * Send a JSON body (or none when `body` is undefined) and parse the JSON answer (undefined when
   * empty). PUT/PATCH/DELETE are retried like GET; POST only when it surely was not acted on (see
   * `RequestOptions.idempotent`), so a stream is never created twice.
   */
  sendJson<T = unknown>(
    method: WriteMethod,
    url: string | URL,
    body: unknown,
    options?: RequestOptions,
  ): Promise<T>;
  /**
   * Open a server-sent-events response. One attempt, no retry: the SSE state machine owns reconnects.
   * Non-2xx throws: 422 as `StreamRebalancingError`, 429 as `RateLimitedError`, 5xx as `HttpError`,
   * other 4xx as `PermanentHttpError`.
   */
  openEventStream(url: string | URL, options?: EventStreamOptions): Promise<EventStreamResponse>;
  /** Closes pooled connections (only those of the Agent this client created). */
  close(): Promise<void>;
}

const MiB = 1024 * 1024;
/**
 * Largest response body, by the memory target (peak RSS ≤ 300 MB per worker, bench/README.md): a body
 * is held about four times while read and parsed (chunks, joined buffer, string, parsed objects ≈ 1.8×
 * the text), so 8 MiB costs ≈ 32 MB per request, ≈ 130 MB with the default 4 requests in flight. The
 * largest real page is far smaller: a user's 30 days of 5-minute CGM is ≈ 0.4 MB in the sandbox, a
 * month of minute-level intraday a few MB. A larger body is a `BodyTooLargeError` (permanent, clear).
 */
export const DEFAULT_MAX_BODY_BYTES = 8 * MiB;
/** Error bodies are read up to this size for the excerpt and messages; the rest is dropped. */
const ERROR_BODY_BYTES = 64 * 1024;

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
  const maxAttempts = Math.max(1, options.maxAttempts ?? 6);
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 300_000;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxRedirects = options.maxRedirects ?? 5;
  const userAgent = options.userAgent ?? USER_AGENT;

  const budgetFor = (key: string | undefined): RequestBudget | undefined =>
    key !== undefined && options.budgets ? options.budgets.forKey(key) : options.budget;

  const report = (event: RequestEvent, url: URL): void => {
    try {
      options.onRequest?.({ ...event, endpoint: endpointKind(url) });
    } catch (err) {
      log.warn({ err }, 'onRequest hook threw');
    }
    log.debug({ ...event, url: redactUrl(url) }, 'http request');
  };

  /** One HTTP exchange, following allowed same-origin redirects. Budget is taken per exchange. */
  async function exchange(
    method: string,
    startUrl: URL,
    init: {
      body: string | undefined;
      headers: Record<string, string>;
      signal: AbortSignal | undefined;
      budget: RequestBudget | undefined;
      attempt: number;
      bodyTimeout: number;
    },
  ): Promise<{ res: Dispatcher.ResponseData; url: URL; startedAt: number }> {
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
          headersTimeout,
          bodyTimeout: init.bodyTimeout,
        });
      } catch (err) {
        if (init.signal?.aborted) throw abortReason(init.signal);
        report(
          {
            method,
            host: url.host,
            status: 0,
            durationMs: clock.now() - startedAt,
            attempt: init.attempt,
            error: codeOf(err),
          },
          url,
        );
        throw err;
      }
      if (res.statusCode < 300 || res.statusCode >= 400) return { res, url, startedAt };
      // 3xx: follow only same-origin GET redirects (see header comment).
      report(
        {
          method,
          host: url.host,
          status: res.statusCode,
          durationMs: clock.now() - startedAt,
          attempt: init.attempt,
        },
        url,
      );
      await discard(res);
      const location = headerValue(res.headers.location);
      const redacted = redactUrl(url);
      if (!location) throw new RedirectRefusedError(method, redacted, res.statusCode, 'no Location header');
      let target: URL;
      try {
        target = new URL(location, url);
      } catch {
        throw new RedirectRefusedError(method, redacted, res.statusCode, 'unreadable Location header');
      }
      if (target.origin !== url.origin) {
        throw new RedirectRefusedError(
          method,
          redacted,
          res.statusCode,
          `target ${target.origin} is another origin`,
        );
      }
      if (method !== 'GET')
        throw new RedirectRefusedError(method, redacted, res.statusCode, 'writes are not redirected');
      if (hop >= maxRedirects)
        throw new RedirectRefusedError(method, redacted, res.statusCode, 'too many redirects');
      url = target;
    }
  }

  async function requestJson<T>(
    method: string,
    input: string | URL,
    body: unknown,
    opts: RequestOptions,
    emptyIsValid: boolean,
  ): Promise<T> {
    const startUrl = toUrl(input);
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': userAgent,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    };
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const budget = budgetFor(opts.budgetKey);
    let lastError: unknown;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const last = attempt === maxAttempts;
      let waitMs: number;
      try {
        const { res, url, startedAt } = await exchange(method, startUrl, {
          body: payload,
          headers,
          signal: opts.signal,
          budget,
          attempt,
          bodyTimeout,
        });
        const redacted = redactUrl(url);
        const status = res.statusCode;
        if (status >= 200 && status < 300) {
          let text: string;
          try {
            text = await readBody(res, maxBodyBytes, method, redacted);
          } catch (err) {
            if (opts.signal?.aborted) throw abortReason(opts.signal);
            if (err instanceof BodyTooLargeError) throw err;
            report(
              {
                method,
                host: url.host,
                status,
                durationMs: clock.now() - startedAt,
                attempt,
                error: codeOf(err),
              },
              url,
            );
            throw err instanceof ResponseBodyError
              ? err
              : new ResponseBodyError(
                  method,
                  redacted,
                  status,
                  `body cut off (${codeOf(err) ?? 'read error'})`,
                  {
                    cause: err,
                  },
                );
          }
          if (text.trim() === '' && (emptyIsValid || status === 204)) {
            report({ method, host: url.host, status, durationMs: clock.now() - startedAt, attempt }, url);
            return undefined as T;
          }
          try {
            const parsed = JSON.parse(text) as T;
            report({ method, host: url.host, status, durationMs: clock.now() - startedAt, attempt }, url);
            return parsed;
          } catch (err) {
            // A 2xx with broken JSON is almost always a body cut mid-way by a proxy or reset: retry.
            report(
              {
                method,
                host: url.host,
                status,
                durationMs: clock.now() - startedAt,
                attempt,
                error: 'INVALID_JSON',
              },
              url,
            );
            throw new ResponseBodyError(
              method,
              redacted,
              status,
              `invalid JSON (${text.length} chars read)`,
              {
                cause: err,
              },
            );
          }
        }
        report({ method, host: url.host, status, durationMs: clock.now() - startedAt, attempt }, url);
        const error = await errorFromResponse(method, redacted, res, clock.now(), secretValuesOf(startUrl));
        throw error;
      } catch (err) {
        if (opts.signal?.aborted) throw abortReason(opts.signal);
        lastError = err;
        const idempotent = opts.idempotent ?? method !== 'POST';
        if (!idempotent && !(err instanceof RateLimitedError) && !isNotSentError(err)) {
          throw isOurError(err)
            ? err
            : new NetworkError(method, redactUrl(startUrl), err, secretValuesOf(startUrl));
        }
        if (err instanceof RateLimitedError) {
          const asked = err.retryAfterMs;
          if (asked !== undefined && asked > maxRetryAfterMs) throw err;
          waitMs = asked ?? backoffDelayMs(attempt, options.backoff);
        } else if (err instanceof HttpError && err.retryable) {
          waitMs = backoffDelayMs(attempt, options.backoff);
        } else if (err instanceof ResponseBodyError) {
          waitMs = backoffDelayMs(attempt, options.backoff);
        } else if (isRetryableNetworkError(err)) {
          lastError = new NetworkError(method, redactUrl(startUrl), err, secretValuesOf(startUrl));
          waitMs = backoffDelayMs(attempt, options.backoff);
        } else if (isOurError(err)) {
          throw err;
        } else {
          // Unknown failure (e.g. invalid URL, TLS config): not worth retrying; wrap with a redacted URL.
          throw new NetworkError(method, redactUrl(startUrl), err, secretValuesOf(startUrl));
        }
        if (last) break;
        log.debug(
          { method, url: redactUrl(startUrl), attempt, waitMs, err: lastError },
          'http request failed, retrying',
        );
        await clock.sleep(waitMs, opts.signal);
      }
    }
    throw lastError;
  }

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
      const startUrl = toUrl(input);
      const headers: Record<string, string> = {
        accept: 'text/event-stream',
        'cache-control': 'no-cache',
        'user-agent': userAgent,
        ...opts.headers,
      };
      let exchanged: Awaited<ReturnType<typeof exchange>>;
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
        if (isOurError(err)) throw err;
        throw new NetworkError('GET', redactUrl(startUrl), err, secretValuesOf(startUrl));
      }
      const { res, url, startedAt } = exchanged;
      report(
        {
          method: 'GET',
          host: url.host,
          status: res.statusCode,
          durationMs: clock.now() - startedAt,
          attempt: 1,
        },
        url,
      );
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

/** Builds the typed error for a non-2xx answer (reads a bounded excerpt of the body). */
async function errorFromResponse(
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

/** Reads a whole body, refusing more than `maxBytes`, checking Content-Length against what arrived. */
async function readBody(
  res: Dispatcher.ResponseData,
  maxBytes: number,
  method: string,
  redactedUrl: string,
): Promise<string> {
  const declared = Number(headerValue(res.headers['content-length']) ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.body.destroy();
    throw new BodyTooLargeError(method, redactedUrl, maxBytes);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of res.body) {
    const buf = chunk as Buffer;
    received += buf.length;
    if (received > maxBytes) {
      res.body.destroy();
      throw new BodyTooLargeError(method, redactedUrl, maxBytes);
    }
    chunks.push(buf);
  }
  if (Number.isFinite(declared) && received !== declared) {
    throw new ResponseBodyError(
      method,
      redactedUrl,
      res.statusCode,
      `body cut off (${received} of ${declared} bytes)`,
    );
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readErrorBody(res: Dispatcher.ResponseData): Promise<string> {
  const chunks: Buffer[] = [];
  let received = 0;
  try {
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      received += buf.length;
      if (received >= ERROR_BODY_BYTES) {
        res.body.destroy();
        break;
      }
    }
  } catch {
    // The excerpt is best effort: a cut error body still leaves the status as the signal.
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function discard(res: Dispatcher.ResponseData): Promise<void> {
  try {
    await res.body.dump({ limit: ERROR_BODY_BYTES });
  } catch {
    // Nothing to keep from a redirect body.
  }
}

function toUrl(input: string | URL): URL {
  return typeof input === 'string' ? new URL(input) : input;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const causeCode = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
  return typeof causeCode === 'string' ? causeCode : err instanceof Error ? err.name : undefined;
}

function isOurError(err: unknown): boolean {
  return (
    err instanceof HttpError ||
    err instanceof PermanentHttpError ||
    err instanceof RedirectRefusedError ||
    err instanceof BodyTooLargeError ||
    err instanceof ResponseBodyError ||
    err instanceof NetworkError
  );
}
