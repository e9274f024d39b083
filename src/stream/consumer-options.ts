/** The config's `stream` settings as `StreamConsumer` options (src/stream/STATE-MACHINE.md, "Options"). */
import type { Config } from '../config/schema.ts';
import type { StreamConsumerOptionsInput } from './resolve-consumer-options.ts';

export function consumerOptionsFromConfig(stream: Config['stream']): StreamConsumerOptionsInput {
  return {
    staleAfterMs: stream.staleAfterMs,
    gapAfterMs: stream.gapAfterMs,
    replayTimeoutMs: stream.replayTimeoutMs,
    quietPokes: stream.quietPokes,
    passTimeoutMs: stream.passTimeoutMs,
    microBatch: { maxFrames: stream.batchMaxFrames, maxWaitMs: stream.batchMaxWaitMs },
    backoff: {
      minMs: stream.reconnectMinMs,
      initialMs: stream.backoffInitialMs,
      maxMs: Math.max(stream.backoffMaxMs, stream.backoffInitialMs),
      rateLimitedInitialMs: stream.rateLimitedInitialMs,
      rateLimitedMaxMs: Math.max(stream.rateLimitedMaxMs, stream.rateLimitedInitialMs),
    },
    idleHygiene:
      stream.maxPokesWithoutData > 0
        ? { enabled: true, maxPokesWithoutData: stream.maxPokesWithoutData }
        : { enabled: false },
  };
}
