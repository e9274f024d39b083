/**
 * What a job runner does after a job threw, the same for both runners (queue-worker.ts on BullMQ,
 * inline-runner.ts in process), from `classifyFailure` (src/errors/classify-failure.ts):
 * - `permanent` → `fail`: no more attempts (BullMQ's `UnrecoverableError`);
 * - `rate-limited` → `wait` the server's `Retry-After` (else `rateLimitDelayMs`) without spending an
 *   attempt: the job did nothing wrong, the platform asked for a pause;
 * - `outage` (Postgres, Redis or a connection away) → `wait` `outageDelayMs` without spending an
 *   attempt, so an outage longer than the retry back-off does not fail work for good;
 * - anything else → `retry`: spend an attempt, with the definition's back-off.
 */
import { classifyFailure } from '../errors/index.ts';

/** Delay of a rate-limited job when the platform gave no Retry-After. */
export const DEFAULT_RATE_LIMIT_DELAY_MS = 60_000;
/** Delay of a job that met an outage (Postgres or a connection away). */
export const DEFAULT_OUTAGE_DELAY_MS = 5_000;

export type JobRetryDecision =
  | { action: 'fail' }
  | { action: 'wait'; delayMs: number; reason: 'rate limited' | 'service unreachable' }
  | { action: 'retry' };

export interface JobWaits {
  /** Wait after a 429 without `Retry-After`, ms (default 60,000). */
  rateLimitDelayMs?: number;
  /** Wait after an outage, ms (default 5,000). */
  outageDelayMs?: number;
}

export function jobRetryDecision(error: unknown, waits: JobWaits = {}): JobRetryDecision {
  const failure = classifyFailure(error);
  switch (failure.kind) {
    case 'permanent':
      return { action: 'fail' };
    case 'rate-limited':
      return {
        action: 'wait',
        delayMs: failure.retryAfterMs ?? waits.rateLimitDelayMs ?? DEFAULT_RATE_LIMIT_DELAY_MS,
        reason: 'rate limited',
      };
    case 'outage':
      return {
        action: 'wait',
        delayMs: waits.outageDelayMs ?? DEFAULT_OUTAGE_DELAY_MS,
        reason: 'service unreachable',
      };
    default:
      return { action: 'retry' };
  }
}
