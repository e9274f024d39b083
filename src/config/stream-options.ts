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

export interface StreamBackoffSettings {
  /**
   * Every reconnect (after a drop, a stale connection, a 422, an error) waits at least this long, ms:
   * the platform rebalances after a disconnect and answers 422 inside that window. Default 2000.
   */
  minMs: number;
  /** Jitter span of the first reconnect, added to `minMs`, ms. Default 1000. */
  baseMs: number;
  /** Largest delay, ms (clamped to `staleAfterMs`, see STATE-MACHINE.md). Default 15_000. */
  capMs: number;
  /** Growth per attempt. Default 2. */
  factor: number;
  /**
   * After a 429 (the platform refuses for the hour's budget, not for a rebalancing): jitter span of the
   * first wait, ms, doubling per 429 in a row up to `rateLimitedCapMs`; a `Retry-After` wins when longer.
   * Independent of the stale rule's cap. Default 30_000.
   */
  rateLimitedBaseMs: number;
  /** Longest wait after a 429, ms. Default 900_000 (15 minutes). */
  rateLimitedCapMs: number;
}

export interface IdleHygieneOptions {
  /** Drop the connection after `maxPokesWithoutData` consecutive pokes. Default false. */
  enabled: boolean;
  /** Default 5 (the provider's advice). */
  maxPokesWithoutData: number;
  /** Pause before reconnecting after the 1st, 2nd, … idle drop (last one repeats); reset on data. */
  delaysMs: number[];
}

export interface MicroBatchOptions {
  /** Commit when this many frames are buffered. Default 1000. */
  maxFrames: number;
  /** Commit when the oldest buffered frame is this old. Default 250. */
  maxWaitMs: number;
  /**
   * Commit when the buffered frames hold this many bytes (of their data), so that a batch of large
   * frames stays bounded too. Default 8 MiB.
   */
  maxBytes: number;
}

export interface StreamConsumerOptions {
  /** No frame at all (not even a poke) for this long: drop and reconnect. Default 15_000 (three missed 5 s pokes). */
  staleAfterMs: number;
  backoff: StreamBackoffSettings;
  idleHygiene: IdleHygieneOptions;
  /**
   * A disconnect longer than this (or a start-up this long after the last committed cursor) is filled by
   * replay before the main stream reconnects. Default 300_000: shorter drops resume from the stream's
   * own server-side checkpoint, so replaying them would only add duplicates.
   */
  gapAfterMs: number;
  microBatch: MicroBatchOptions;
  /** How far back replay serves. Default 30. */
  replayMaxDays: number;
  /** How long the platform keeps a stream checkpoint after a disconnect. Default 7. */
  checkpointRetentionDays: number;
  /**
   * A replay that has not handed off (an event with `created_at` ≥ T) this long after it started, over
   * all its attempts, is given up: the gap is reported (`replay-timed-out`) for a REST backfill and
   * the main stream reconnects. Pokes never end a replay. Default 600_000.
   */
  replayTimeoutMs: number;
  /** While live without data, persist `lastLiveAt` this often (so downtime after a crash is measured). Default 60_000. */
  heartbeatCommitMs: number;
  /**
   * Failed replay attempts in a row (errors, drops, stale, 422) before the gap is handed to a REST
   * backfill (`replay-unavailable`) and the main stream reconnects: live data beats a stuck replay. A
   * replay the server ends before the hand-off counts as a failed attempt. Default 5.
   */
  replayAttempts: number;
  /**
   * Longest wait between two attempts of a commit that keeps failing, ms. A failed commit closes the
   * connection (reading stops, so nothing more is held) and is retried with back-off until it lands;
   * only a permanent failure ends the run. Default 30_000.
   */
  commitRetryMaxMs: number;
  /**
   * Pokes in a row, stamped at or after the hand-off time T: the platform pokes "when nothing else
   * flows", so everything created before T has been sent. They end a reconciliation pass (caught up).
   * A replay is never handed off by pokes (the provider's recipe ignores them): it is given up instead
   * (`replay-quiet`), its gap left to the reconciliation stream, so that a quiet organization, where no
   * event created after T exists, does not wait `replayTimeoutMs`. Default 2.
   */
  quietPokes: number;
  /**
   * `primary`: keep the organization's main stream live (states above). `pass`: one pass of the
   * reconciliation stream: read it until caught up (an event created at or after the pass's start, or
   * `quietPokes` pokes), commit, stop. Default `primary`.
   */
  role: 'primary' | 'pass';
  /** A pass that has not caught up after this long commits what it read and stops. Default 1_800_000. */
  passTimeoutMs: number;
  /**
   * Set when a pass reads the provider's replay (the gaps the reconciliation stream cannot reach) instead
   * of the reconciliation stream: it is caught up at the first event created at or after `catchUpAtMs`
   * (platform ms), or at `quietPokes` pokes stamped at or after it, rather than at its own start; and
   * since a replay starts again from its date on every connect, data read before a drop is no progress
   * (its failures in a row are not reset). Set per pass, never from config. Default undefined.
   */
  passReplay: { catchUpAtMs: number } | undefined;
  /** Largest frame kept in memory. Default 8 MiB. */
  maxFrameBytes: number;
}

export const DEFAULT_STREAM_CONSUMER_OPTIONS: StreamConsumerOptions = {
  // Three missed pokes: one late poke is jitter, three in a row is a dead connection.
  staleAfterMs: 3 * STREAM_POKE_INTERVAL_MS,
  // minMs: the platform answers 422 while it rebalances right after a disconnect (observed: 0.4 s is
  // too early). capMs: never longer than the stale rule tolerates (the consumer clamps it to staleAfterMs).
  // rateLimited*: a 429 refuses for the hour's budget; reconnecting every few seconds would only spend
  // more of it, so 429s back off on their own, growing to minutes (STATE-MACHINE.md, "Back-off").
  backoff: {
    minMs: 2_000,
    baseMs: 1_000,
    capMs: 15_000,
    factor: 2,
    rateLimitedBaseMs: 30_000,
    rateLimitedCapMs: 900_000,
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
  passReplay: undefined,
  maxFrameBytes: 8 * 1024 * 1024,
};
