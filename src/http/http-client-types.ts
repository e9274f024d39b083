/**
 * The HTTP client's public shapes: its options (each with its default), the per-request options, the
 * event the `onRequest` hook sees, the budget it takes tokens from, the `HttpClient` interface
 * (http-client.ts builds one), and the kind of platform endpoint a URL addresses (a bounded label for
 * metrics).
 */
import type { Dispatcher } from 'undici';
import type { Logger } from '../log/logger.ts';
import type { BackoffOptions } from '../time/backoff-delay.ts';
import type { Clock } from '../time/clock.ts';
import type { PlatformClock } from '../time/platform-clock.ts';

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
  backoff?: Partial<BackoffOptions> & { random?: () => number };
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
  /** Told the `Date` header of every answer, with the request's send and receive times. */
  platformClock?: PlatformClock;
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

/**
 * What a request budget is, apart from how it is built and stored (src/budget/request-budget.ts): a
 * token bucket whose rate follows what the platform grants (lowered on 429s, raised on success).
 */
export interface RequestBudget {
  /** Hashed key of the bucket (safe to log). */
  readonly key: string;
  /**
   * Resolves with a ticket when a request may be sent; rejects when `signal` aborts while waiting. The
   * ticket goes back with the answer's 429, if one comes.
   */
  take(signal?: AbortSignal): Promise<BudgetTicket>;
  /**
   * Resolves once no `Retry-After` holds the bucket (without taking a token): the retry of a request
   * answered 429 waits here and spends no second token.
   */
  ready(signal?: AbortSignal): Promise<void>;
  /** The answer to the request sent with `ticket` was a 429: lower the granted rate, honour `Retry-After`. */
  rateLimited(ticket: BudgetTicket, retryAfterMs: number | undefined): Promise<void>;
  /** An answer that was not a 429 came back: the granted rate climbs back. */
  succeeded(): void;
  /** Whole tokens available now (for metrics). */
  remaining(): Promise<number>;
  /** Requests per hour granted now (the configured usable rate until a 429 lowers it). */
  grantedPerHour(): Promise<number>;
}

/** What a granted token carries back with its answer: the decrease epoch it was taken in. */
export interface BudgetTicket {
  epoch: number;
}

/** Hands out one budget per API token (the HTTP client looks budgets up by a request's `budgetKey`). */
export interface BudgetRegistry {
  forKey(tokenOrKey: string): RequestBudget;
}

/**
 * The kind of platform endpoint a URL addresses: a bounded label for metrics (a path holds user ids and
 * stream ids, which must never become label values). Matched on the end of the path, since base URLs
 * may carry a prefix (a proxy, the sandbox's `/api`).
 */
export const ENDPOINT_KINDS = [
  'users',
  'records',
  'connections',
  'streams',
  'stream_connect',
  'replay',
  'legacy_latest',
  'legacy',
  'other',
] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];

export function endpointKind(url: URL): EndpointKind {
  const path = url.pathname.replace(/\/+$/, '');
  if (/\/v1\//.test(path)) return /\/latest\.json$/.test(path) ? 'legacy_latest' : 'legacy';
  if (/\/streams\/[^/]+\/connect$/.test(path)) return 'stream_connect';
  if (/\/streams(\/[^/]+)?$/.test(path)) return 'streams';
  if (/\/replay$/.test(path)) return 'replay';
  if (/\/connections$/.test(path)) return 'connections';
  if (/\/users\/[^/]+\/[^/]+$/.test(path)) return 'records';
  if (/\/users(\/[^/]+)?$/.test(path)) return 'users';
  return 'other';
}
