import type { Logger } from '../log/logger.ts';
import { MAX_STREAMS_PER_CUSTOMER } from '../validic/platform-limits.ts';
import { describeStream422 } from '../validic/requests.ts';

/**
 * A 422 on connect is usually the platform rebalancing after a reconnect (too many client connections
 * for a moment), which the consumer backs off from. Its body says when it is something else (an invalid
 * filter, the stream limit): then the operator is told which, with the fix (requests.ts).
 */
export function reportConnect422(error: unknown, streamName: string, log: Logger): void {
  const e = error as { status?: unknown; messages?: unknown };
  if (e?.status !== 422) return;
  const messages = Array.isArray(e.messages) ? e.messages.map(String) : [];
  const described = describeStream422({
    operation: 'connect',
    streamName,
    messages,
    maxStreams: MAX_STREAMS_PER_CUSTOMER,
  });
  if (described.reason === 'connection_limit' || (described.reason === 'other' && messages.length === 0)) {
    log.debug({ reason: described.reason }, described.message);
  } else {
    log.warn({ reason: described.reason, fix: described.fix }, `${described.message}. Fix: ${described.fix}`);
  }
}
