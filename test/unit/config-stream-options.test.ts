/**
 * One source of the stream's defaults (STATE-MACHINE.md, I9): the config schema's `stream.*` defaults,
 * turned into consumer options, are exactly src/config/stream-options.ts.
 */
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { DEFAULT_STREAM_CONSUMER_OPTIONS } from '../../src/config/stream-options.ts';
import {
  consumerOptionsFromConfig,
  resolveStreamConsumerOptions,
} from '../../src/stream/consumer-options.ts';

describe('stream defaults', () => {
  it('the config schema takes its stream defaults from stream-options.ts', () => {
    const stream = configSchema.shape.stream.parse(undefined);
    expect(resolveStreamConsumerOptions(consumerOptionsFromConfig(stream))).toEqual(
      DEFAULT_STREAM_CONSUMER_OPTIONS,
    );
  });

  it('gapAfterMs is 5 minutes: twenty reconnects at the back-off cap, an outage and not a rebalancing storm', () => {
    const { gapAfterMs, staleAfterMs, backoff } = DEFAULT_STREAM_CONSUMER_OPTIONS;
    expect(gapAfterMs).toBe(300_000);
    expect(gapAfterMs / Math.min(backoff.capMs, staleAfterMs)).toBe(20);
  });

  it('reads a config file written with the back-off keys earlier names as the new ones', () => {
    const stream = configSchema.shape.stream.parse({
      backoffInitialMs: 20,
      backoffMaxMs: 300,
      rateLimitedInitialMs: 200,
      rateLimitedCapMs: 1_000,
      rateLimitedMaxMs: 5_000, // its new name is given too: the new one wins
    });
    expect(stream).toMatchObject({
      backoffBaseMs: 20,
      backoffCapMs: 300,
      rateLimitedBaseMs: 200,
      rateLimitedCapMs: 1_000,
    });
    expect(stream).not.toHaveProperty('backoffInitialMs');
  });
});
