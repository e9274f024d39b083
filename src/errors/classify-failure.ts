/**
 * The one answer to "what now?" after a failure, for every retry loop: the HTTP client, the SSE
 * consumer, the pipelined stream commit and both job runners (inline and BullMQ).
 *
 * | kind           | meaning                                                   | job runners                        |
 * | -------------- | --------------------------------------------------------- | ---------------------------------- |
 * | `permanent`    | the same call fails the same way (`PermanentError`, an     | fail now (BullMQ `UnrecoverableError`) |
 * |                | error with `retryable: false`, 401/403); `unauthorized`    |                                    |
 * |                | marks 401/403 (a wrong token)                              |                                    |
 * | `rate-limited` | 429, with the server's `Retry-After` when it gave one      | wait, no attempt spent             |
 * | `rebalancing`  | 422 on a stream connect: the platform rebalances           | retry, an attempt spent            |
 * | `outage`       | Postgres, Redis or a connection away (error-codes.ts)      | wait, no attempt spent             |
 * | `conflict`     | another transaction was in the way: 40P01 deadlock         | wait 1 s, no attempt spent         |
 * |                | detected, 40001 serialization failure, 55P03 a lock not    |                                    |
 * |                | granted within the lock timeout (or NOWAIT)                |                                    |
 * | `retry`        | a known transient failure: 5xx, a cut body, a socket error | retry, an attempt spent            |
 * | `unknown`      | nothing in the chain says: a bug, a TLS setting …          | retry, an attempt spent            |
 *
 * The HTTP client retries `rate-limited`, `outage` (but not an unresolved host name) and `retry` in
 * process and throws `unknown` at once; the SSE consumer retries all but `permanent`.
 *
 * The chain is read outermost first (cause-chain.ts), and the first link that decides wins: a
 * `NetworkError` (retryable) wrapping an `ECONNREFUSED` is an outage, a `UserFacingError` wrapping a
 * 401 is permanent. Plain objects with `status` / `retryable` / `code` count as well as our classes.
 */
import {
  CONFLICT_CODES,
  CONNECTION_CODES,
  causeChain,
  OUTAGE_CODES,
  OUTAGE_MESSAGES,
} from './cause-chain.ts';
import { PermanentError } from './error-classes.ts';

export type Failure =
  | { kind: 'permanent'; unauthorized: boolean }
  | { kind: 'rate-limited'; retryAfterMs: number | undefined }
  | { kind: 'rebalancing' }
  | { kind: 'outage' }
  | { kind: 'conflict' }
  | { kind: 'retry' }
  | { kind: 'unknown' };

export type FailureKind = Failure['kind'];

interface Link {
  status?: unknown;
  retryable?: unknown;
  retryAfterMs?: unknown;
  code?: unknown;
  message?: unknown;
}

export function classifyFailure(error: unknown): Failure {
  let transient = false;
  for (const link of causeChain(error)) {
    const { status, retryable, retryAfterMs, code, message } = link as Link;
    if (link instanceof PermanentError || retryable === false || status === 401 || status === 403) {
      return { kind: 'permanent', unauthorized: status === 401 || status === 403 };
    }
    if (status === 429) {
      return {
        kind: 'rate-limited',
        retryAfterMs: typeof retryAfterMs === 'number' ? retryAfterMs : undefined,
      };
    }
    if (status === 422) return { kind: 'rebalancing' };
    if (typeof code === 'string' && OUTAGE_CODES.has(code)) return { kind: 'outage' };
    if (typeof message === 'string' && OUTAGE_MESSAGES.test(message)) return { kind: 'outage' };
    if (typeof code === 'string' && CONFLICT_CODES.has(code)) return { kind: 'conflict' };
    // Transient, but a deeper link may still say "outage": read on.
    if (retryable === true || (typeof status === 'number' && status >= 500)) transient = true;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) transient = true;
  }
  return transient ? { kind: 'retry' } : { kind: 'unknown' };
}
