/**
 * The stream consumer's defaults, in one place: the consumer resolves its options from them and the
 * config schema (`stream.*`) takes its defaults from them, so the two cannot drift apart.
 * The arithmetic that ties them together is in STATE-MACHINE.md ("Timing rules").
 */
import {
  REPLAY_RETENTION_DAYS,
  STREAM_CHECKPOINT_RETENTION_DAYS,
  STREAM_POKE_INTERVAL_MS,
} from '../validic/platform-limits.ts';
import type { StreamConsumerOptions } from './types.ts';

export const DEFAULT_STREAM_CONSUMER_OPTIONS: StreamConsumerOptions = {
  // Three missed pokes: one late poke is jitter, three in a row is a dead connection.
  staleAfterMs: 3 * STREAM_POKE_INTERVAL_MS,
  // minMs: the platform answers 422 while it rebalances right after a disconnect (observed: 0.4 s is
  // too early). maxMs: never longer than the stale rule tolerates (the consumer clamps it to staleAfterMs).
  // rateLimited*: a 429 refuses for the hour's budget; reconnecting every few seconds would only spend
  // more of it, so 429s back off on their own, growing to minutes (STATE-MACHINE.md, "Back-off").
  backoff: {
    minMs: 2_000,
    initialMs: 1_000,
    maxMs: 15_000,
    factor: 2,
    rateLimitedInitialMs: 30_000,
    rateLimitedMaxMs: 900_000,
  },
  idleHygiene: { enabled: false, maxPokesWithoutData: 5, delaysMs: [5_000, 15_000, 60_000, 300_000] },
  gapAfterMs: 300_000,
  // maxFrames only counts under a backlog (catch-up, replay): at the platform's usual rates the 250 ms
  // rule commits first. 1,000 rather than 500 halves the transactions, and with them their fixed
  // round trips and server work (PostgreSQL CPU on bench/stream-throughput.ts 2.1 → 1.8 s for 20,000
  // events); it costs ~55 MB more peak heap while catching up (2,000: ~+180 MB, for little more).
  // maxBytes: what one batch may hold of frames' data, so a batch of large frames (an intraday series
  // can be megabytes) stays bounded as well as a batch of many small ones.
  microBatch: { maxFrames: 1000, maxWaitMs: 250, maxBytes: 8 * 1024 * 1024 },
  replayMaxDays: REPLAY_RETENTION_DAYS,
  checkpointRetentionDays: STREAM_CHECKPOINT_RETENTION_DAYS,
  replayTimeoutMs: 600_000,
  heartbeatCommitMs: 60_000,
  replayAttempts: 5,
  commitRetryMaxMs: 30_000,
  // Two pokes (10 s of nothing flowing) rather than one: a single poke may race the first frame of a
  // backlog the server is still preparing.
  quietPokes: 2,
  role: 'primary',
  // A pass of the reconciliation stream re-delivers everything since the last one: an hour at a large
  // organization's rate is seconds to a few minutes of reading; a day after an outage, more.
  passTimeoutMs: 1_800_000,
  maxFrameBytes: 8 * 1024 * 1024,
};
