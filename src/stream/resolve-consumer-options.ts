/** The consumer's options as callers pass them (every field optional), merged with src/config/stream-options.ts. */

import type {
  IdleHygieneOptions,
  MicroBatchOptions,
  StreamBackoffSettings,
  StreamConsumerOptions,
} from '../config/stream-options.ts';
import { DEFAULT_STREAM_CONSUMER_OPTIONS } from '../config/stream-options.ts';

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
