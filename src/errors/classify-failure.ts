/**
 * The one answer to "what now?" after a failure, for every retry loop: the HTTP client, the SSE
 * consumer, the pipelined stream commit and both job runners (inline and BullMQ).
 * Why and how: README.md, "`classify-failure.ts`".
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
