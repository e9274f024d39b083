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
 * PostgreSQL: the transaction lost a race with another and was rolled back, through no fault of its own:
 * `40P01` deadlock detected (the deadlock detector chose it), `40001` serialization failure. Running the
 * whole transaction again is the documented remedy; the loader does so itself a few times
 * (src/warehouse/loader/retry-on-conflict.ts), and job runners wait a moment without spending an attempt.
 */
export const CONFLICT_CODES: ReadonlySet<string> = new Set(['40P01', '40001']);

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
