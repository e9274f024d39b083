/**
 * How the consumer treats a failed open of the stream or the replay: the one `classifyFailure`, read in
 * the consumer's terms. The driver (stream-consumer.ts) hands the answer to the pure transition function.
 */
import { classifyFailure } from '../errors/index.ts';

/**
 * `rebalancing`: a 422 right after a disconnect (back off briefly, retry). `rate-limited`: a 429 (back
 * off for minutes: the hour's budget is spent). `permanent`: 401/403, the token is wrong (stop).
 * `refused`: any other permanent failure: permanent for the stream, and for a replay "this gap cannot be
 * replayed". `retry`: everything else (5xx, network, unknown).
 */
export type OpenFailureKind = 'rebalancing' | 'rate-limited' | 'retry' | 'permanent' | 'refused';

export function classifyOpenFailure(error: unknown): OpenFailureKind {
  const failure = classifyFailure(error);
  if (failure.kind === 'permanent') return failure.unauthorized ? 'permanent' : 'refused';
  if (failure.kind === 'rate-limited') return 'rate-limited';
  return failure.kind === 'rebalancing' ? 'rebalancing' : 'retry';
}
