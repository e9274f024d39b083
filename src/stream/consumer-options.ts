/**
 * The consumer's options: as callers pass them (every field optional), merged with the defaults of
 * src/config/stream-options.ts, and from the config's `stream.*`.
 */

import type { Config } from '../config/schema.ts';
import {
  DEFAULT_STREAM_CONSUMER_OPTIONS,
  type IdleHygieneOptions,
  type MicroBatchOptions,
  type StreamBackoffSettings,
  type StreamConsumerOptions,
} from '../config/stream-options.ts';

/** Options as callers pass them: every field optional, nested groups merged with the defaults. */
export type StreamConsumerOptionsInput = Partial<
  Omit<StreamConsumerOptions, 'backoff' | 'idleHygiene' | 'microBatch'>
> & {
  backoff?: Partial<StreamBackoffSettings>;
  idleHygiene?: Partial<IdleHygieneOptions>;
  microBatch?: Partial<MicroBatchOptions>;
};

export function resolveStreamConsumerOptions(input: StreamConsumerOptionsInput = {}): StreamConsumerOptions {
  const d = DEFAULT_STREAM_CONSUMER_OPTIONS;
  return {
    ...d,
    ...input,
    backoff: { ...d.backoff, ...input.backoff },
    idleHygiene: { ...d.idleHygiene, ...input.idleHygiene },
    microBatch: { ...d.microBatch, ...input.microBatch },
  };
}

/** The config's `stream` settings as `StreamConsumer` options (src/stream/STATE-MACHINE.md, "Options"). */
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
      baseMs: stream.backoffBaseMs,
      capMs: Math.max(stream.backoffCapMs, stream.backoffBaseMs),
      rateLimitedBaseMs: stream.rateLimitedBaseMs,
      rateLimitedCapMs: Math.max(stream.rateLimitedCapMs, stream.rateLimitedBaseMs),
    },
    idleHygiene:
      stream.maxPokesWithoutData > 0
        ? { enabled: true, maxPokesWithoutData: stream.maxPokesWithoutData }
        : { enabled: false },
  };
}
