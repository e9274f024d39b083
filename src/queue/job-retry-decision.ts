/**
 * What a job runner does after a job threw, the same for both runners (queue-worker.ts on BullMQ,
 * inline-runner.ts in process), from `classifyFailure` (src/errors/classify-failure.ts):
 * - `permanent` → `fail`: no more attempts (BullMQ's `UnrecoverableError`);
 * - `rate-limited` → `wait` the server's `Retry-After` (else `rateLimitDelayMs`) without spending an
 *   attempt: the job did nothing wrong, the platform asked for a pause;
 * - `outage` (Postgres, Redis or a connection away) → `wait` `outageDelayMs` without spending an
 *   attempt, so an outage longer than the retry back-off does not fail work for good;
 * - `conflict` (a transaction PostgreSQL rolled back for a deadlock, a serialization failure or a lock
 *   not granted in time, which the loader's own retries did not get past) → `wait` `conflictDelayMs`
 *   without spending an attempt: another transaction was in the job's way; running it again is the remedy;
 * - anything else → `retry`: spend an attempt, with the definition's back-off.
 */
import { classifyFailure } from '../errors/index.ts';

/** Delay of a rate-limited job when the platform gave no Retry-After. */
export const DEFAULT_RATE_LIMIT_DELAY_MS = 60_000;
/** Delay of a job that met an outage (Postgres or a connection away). */
export const DEFAULT_OUTAGE_DELAY_MS = 5_000;
/** Delay of a job whose transaction lost a race (deadlock, serialization failure): the race is over. */
export const DEFAULT_CONFLICT_DELAY_MS = 1_000;

export type JobRetryDecision =
  | { action: 'fail' }
  | {
      action: 'wait';
      delayMs: number;
      reason: 'rate limited' | 'service unreachable' | 'transaction conflict';
    }
  | { action: 'retry' };

export interface JobWaits {
  /** Wait after a 429 without `Retry-After`, ms (default 60,000). */
  rateLimitDelayMs?: number;
  /** Wait after an outage, ms (default 5,000). */
  outageDelayMs?: number;
  /** Wait after a transaction conflict (40P01, 40001, 55P03), ms (default 1,000). */
  conflictDelayMs?: number;
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
    case 'conflict':
      return {
        action: 'wait',
        delayMs: waits.conflictDelayMs ?? DEFAULT_CONFLICT_DELAY_MS,
        reason: 'transaction conflict',
      };
    default:
      return { action: 'retry' };
  }
}
