/**
 * The failure facts the classifier reads: the codes of Node's network errors, PostgreSQL's SQLSTATEs
 * and Redis's messages, sorted by what they mean (error-codes), and the walker of an error's cause chain
 * that finds them however deep a library wrapped them.
 */

/**
 * The one table of error codes (Node, undici, PostgreSQL SQLSTATE) that `classifyFailure` and the HTTP
 * client read.
 */

/**
 * A service we depend on is away (Postgres restarting, a refused or dropped connection, DNS failing):
 * an `outage`. Job runners wait it out without spending an attempt; the HTTP client retries it.
 */
export const OUTAGE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // PostgreSQL: admin/crash shutdown, cannot connect now, connection exceptions.
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

/**
 * PostgreSQL: another transaction was in the way, through no fault of this one's: `40P01` deadlock
 * detected (the deadlock detector chose it), `40001` serialization failure, `55P03` lock_not_available
 * (a lock not granted within the `lock_timeout` the loader sets, or a NOWAIT lock in use: the month
 * creation's). Running the whole transaction again is the remedy; the loader does so itself a few times
 * (src/warehouse/loader/load-transaction.ts), and job runners wait a moment without spending an attempt.
 */
export const CONFLICT_CODES: ReadonlySet<string> = new Set(['40P01', '40001', '55P03']);

/** Messages of pg and its pool that mean the same, for errors that carry no code. */
export const OUTAGE_MESSAGES =
  /Connection terminated|connection (?:is )?(?:closed|ended)|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (?:starting up|shutting down)/i;

/**
 * Other connection failures of undici and Node (aborted, network down, socket closed, timeouts, body cut
 * short): worth another attempt, which a job spends.
 */
export const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNABORTED',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_RESPONSE_STATUS_CODE',
]);

/** Failures that prove the request never reached the server (safe to repeat even a POST). */
export const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The host name did not resolve: the HTTP client does not retry it (a mistyped URL fails at once). */
export const UNRESOLVED_HOST_CODES: ReadonlySet<string> = new Set(['ENOTFOUND']);

/**
 * The one walker over error chains: an error, its `cause`, its `cause`'s `cause` …, and the inner
 * errors of an `AggregateError` (Node's happy-eyeballs connect throws one per address). undici and pg
 * wrap the socket error, so the code that says what happened is often a link or two down.
 */

/** Links visited at most, so a cyclic or absurdly deep chain cannot hang a classifier. */
const MAX_LINKS = 16;

/** The error and every error it wraps, outermost first (breadth first), objects only. */
export function* causeChain(error: unknown): Generator<object> {
  const queue: unknown[] = [error];
  const seen = new Set<unknown>();
  while (queue.length > 0 && seen.size < MAX_LINKS) {
    const link = queue.shift();
    if (!link || typeof link !== 'object' || seen.has(link)) continue;
    seen.add(link);
    yield link;
    const { cause, errors } = link as { cause?: unknown; errors?: unknown };
    if (cause !== undefined) queue.push(cause);
    if (Array.isArray(errors)) queue.push(...errors);
  }
}

/** The first string `code` in the chain (`ECONNRESET`, `UND_ERR_SOCKET`, `57P01` …). */
export function errorCodeOf(error: unknown): string | undefined {
  for (const link of causeChain(error)) {
    const code = (link as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** The first `code` in the chain that is one of `codes`. */
export function errorCodeIn(error: unknown, codes: ReadonlySet<string>): string | undefined {
  for (const link of causeChain(error)) {
    const code = (link as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return code;
  }
  return undefined;
}

/** True when some link's `code` is in `codes`. */
export function hasErrorCode(error: unknown, codes: ReadonlySet<string>): boolean {
  return errorCodeIn(error, codes) !== undefined;
}
