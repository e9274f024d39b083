/**
 * Types of the SSE module: frames off the wire, their classification, and the stream consumer's
 * injected dependencies, options, states and counters. Everything the consumer needs from the HTTP
 * client, the clock and the loader is injected through these types, so the module is tested alone.
 */

import type { Logger } from '../log/logger.ts';
import type { Clock } from '../time/clock.ts';

/** One dispatched SSE event. `event` is `message` when the server sent no `event:` field (SSE default). */
export interface SseEventFrame {
  type: 'event';
  event: string;
  data: string;
  /** The `id:` field, when the server sent one (the platform does not; kept for completeness). */
  id?: string;
  /** Clock time (ms) at which the frame was complete. */
  receivedAt: number;
}

/**
 * A frame (or an un-terminated line) larger than `maxFrameBytes`: it was not buffered, only counted,
 * and the reader skipped to the next frame boundary. The caller quarantines it with a reason.
 */
export interface SseOversizedFrame {
  type: 'oversized';
  /** The `event:` name when it appeared in the first bytes of the frame. */
  event: string | undefined;
  /** Bytes of the frame seen when the limit was crossed (the frame is at least this large). */
  bytes: number;
  maxFrameBytes: number;
  /** The first bytes of the frame (≤ 1 KiB), decoded, for the quarantine row. */
  excerpt: string;
  receivedAt: number;
}

export type SseFrame = SseEventFrame | SseOversizedFrame;

/** What a frame means to the consumer. */
export type ClassifiedFrame =
  | { kind: 'data'; payload: unknown; createdAt: string | undefined }
  | { kind: 'poke'; payload: unknown }
  | { kind: 'other'; event: string; data: string }
  | { kind: 'bad'; event: string | undefined; text: string; reason: string };

/**
 * How a frame reached us; becomes `records.arrived_via`: the primary stream, a replay, or a pass of the
 * reconciliation stream.
 */
export type StreamVia = 'stream' | 'replay' | 'reconcile';

/**
 * An item handed to `commit`: a data frame's raw payload (record of any resource type or connection
 * event; the caller routes it by shape), or a bad frame to quarantine with its text and reason.
 */
export type DataFrame =
  | { kind: 'data'; payload: unknown; createdAt: string | undefined; receivedAt: number; bytes: number }
  | { kind: 'bad'; text: string; reason: string; receivedAt: number; bytes: number };

/**
 * The consumer's cursor, stored by the caller as one JSON value in the same transaction as the frames
 * it comes with. All times are ISO-8601 strings.
 */
export interface StreamCheckpoint {
  /** Newest `created_at` among the data frames committed so far (stream or replay). */
  newestCreatedAt?: string;
  /** Last time a frame (data or poke) arrived on the main stream: "we were connected until here". */
  lastLiveAt?: string;
  /**
   * Start T of an open gap: when the main stream was last heard from before it dropped (or stopped).
   * Absent while the main stream is live. At start-up, `lastDisconnectAt ?? lastLiveAt` is the gap start.
   */
  lastDisconnectAt?: string;
  /**
   * The platform's clock minus ours (ms) when the times above were written, from the last poke's `ts`:
   * it turns `lastDisconnectAt` into platform time after a restart (STATE-MACHINE.md, "Which clock T is on").
   */
  platformOffsetMs?: number;
  /**
   * The last disconnect was unclean (a drop, a stale connection, a failed commit, a stop while data
   * flowed): what may have been lost with it. Written with the disconnect, cleared once the stream is
   * live again; a start-up that finds it reports it again (reporting a gap is idempotent).
   */
  uncleanEnd?: StreamGap;
}

export type CommitReason = 'count' | 'bytes' | 'time' | 'state-change' | 'heartbeat' | 'stop' | 'retry';

export interface CommitMeta {
  via: StreamVia;
  /** Why this commit happened (size, age, state change, checkpoint heartbeat, stop). */
  reason: CommitReason;
}

/** A connected SSE response: its body, read as bytes, and the server's clock when it answered. */
export interface SseSource {
  body: AsyncIterable<Uint8Array>;
  /**
   * The response's `Date` header (ms; the header has whole seconds): the platform's clock before its
   * first poke, so that a gap's times are on the platform's clock from the first moment.
   */
  serverTimeMs?: number | undefined;
}

/**
 * A span of platform time (`created_at`) in which events may be missing from the warehouse, and why.
 * Every gap is left to the reconciliation stream, which re-delivers everything created since its last
 * pass; the org's stream decides what else it needs (src/stream/README.md, "Gaps").
 *
 * Unclean ends of the primary stream (the platform's checkpoint moved with what it SENT, so whatever was
 * in flight or held uncommitted is gone from that stream): [newest committed `created_at`, the moment
 * reading stopped], both on the platform's clock.
 * - `crash`: the process died while the stream was live (found at the next start-up).
 * - `dropped`: the server or the network ended the connection.
 * - `stale`: no frame for `staleAfterMs`; the platform may have been sending into a dead connection.
 * - `commit-failed`: commits kept failing; the connection was closed to stop reading.
 * - `stopped`: stopped (Ctrl-C, SIGTERM, a lost slot) while data was flowing.
 *
 * Replays that could not fill their gap:
 * - `beyond-replay`: older than replay serves (`replayMaxDays`); the consumer replays from the earliest
 *   allowed date.
 * - `stream-checkpoint-expired`: longer than the platform keeps the stream checkpoint
 *   (`checkpointRetentionDays`); the consumer replays up to the present instead of up to T.
 * - `replay-timed-out`: no hand-off within `replayTimeoutMs`.
 * - `replay-unavailable`: the replay endpoint refused or failed `replayAttempts` times in a row.
 * - `replay-quiet`: the replay sent everything it had (`quietPokes` pokes at or after T) without an
 *   event created at or after T: a quiet organization, where the hand-off never comes.
 */
export interface StreamGap {
  /** ISO start (platform clock). */
  from: string;
  /** ISO end (platform clock). */
  to: string;
  reason: StreamGapReason;
}

export const UNCLEAN_END_REASONS = ['crash', 'dropped', 'stale', 'commit-failed', 'stopped'] as const;
export const REPLAY_GAP_REASONS = [
  'beyond-replay',
  'stream-checkpoint-expired',
  'replay-unavailable',
  'replay-timed-out',
  'replay-quiet',
] as const;
export type UncleanEndReason = (typeof UNCLEAN_END_REASONS)[number];
export type StreamGapReason = UncleanEndReason | (typeof REPLAY_GAP_REASONS)[number];

/**
 * The answer to `claimReplay`: whether this connection runs the organization's replay, and the newest
 * `created_at` every connection of the organization has committed (replayed data created before it is
 * counted, not written again).
 */
export interface ReplayClaim {
  granted: boolean;
  floorCreatedAt?: string | undefined;
}

export type StreamState =
  | 'stopped'
  | 'connecting'
  | 'live'
  | 'stale'
  | 'backing_off'
  | 'replaying'
  | 'holding';

export type SseLog = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface StreamConsumerDeps {
  /** Opens `GET {streams}/streams/{id}/connect`. Throws with `status` 422 while rebalancing. */
  openStream(signal: AbortSignal): Promise<SseSource>;
  /**
   * Opens `GET /replay?date=YYYY-MM-DD`. Same errors as `openStream`. A pass of the reconciliation
   * stream (`role: 'pass'`) opens that stream's connection here instead (the date is not used).
   */
  openReplay(date: string, signal: AbortSignal): Promise<SseSource>;
  /** Writes the frames and the checkpoint in one transaction. `frames` may be empty (checkpoint only). */
  commit(frames: DataFrame[], checkpoint: StreamCheckpoint, meta: CommitMeta): Promise<void>;
  loadCheckpoint(): Promise<StreamCheckpoint | null>;
  /**
   * Called once per gap: an unclean end of the stream, or a replay that could not fill its gap. The
   * caller records it and brings the next reconciliation pass forward (or plans a REST backfill for
   * what no stream can deliver any more). Awaited; must not throw.
   */
  onGap?(gap: StreamGap): void | Promise<void>;
  /**
   * Asked before a replay opens: whether this connection runs it. An organization runs one replay at a
   * time however many connections it has: `false` leaves this connection's gap to the replay already
   * running (and to the reconciliation stream) and connects the stream at once. Default: always true.
   */
  claimReplay?(): ReplayClaim;
  /** Called when a replay this connection claimed ends, however it ends. */
  releaseReplay?(): void;
  onStateChange?(from: StreamState, to: StreamState, reason: string): void;
  /** Default: the system clock. */
  clock?: Clock;
  /** Uniform [0, 1) for back-off jitter. Default `Math.random`. */
  random?: () => number;
  /** Default: silent. */
  log?: SseLog;
}

export interface BackoffOptions {
  /**
   * Every reconnect (after a drop, a stale connection, a 422, an error) waits at least this long, ms:
   * the platform rebalances after a disconnect and answers 422 inside that window. Default 2000.
   */
  minMs: number;
  /** Jitter span of the first reconnect, added to `minMs`, ms. Default 1000. */
  initialMs: number;
  /** Largest delay, ms (clamped to `staleAfterMs`, see STATE-MACHINE.md). Default 15_000. */
  maxMs: number;
  /** Growth per attempt. Default 2. */
  factor: number;
  /**
   * After a 429 (the platform refuses for the hour's budget, not for a rebalancing): jitter span of the
   * first wait, ms, doubling per 429 in a row up to `rateLimitedMaxMs`; a `Retry-After` wins when longer.
   * Independent of the stale rule's cap. Default 30_000.
   */
  rateLimitedInitialMs: number;
  /** Longest wait after a 429, ms. Default 900_000 (15 minutes). */
  rateLimitedMaxMs: number;
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
  backoff: BackoffOptions;
  idleHygiene: IdleHygieneOptions;
  /**
   * A disconnect longer than this (or a start-up this long after the last checkpoint) is filled by
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
  /** Largest frame kept in memory. Default 8 MiB. */
  maxFrameBytes: number;
}

export interface StreamCounters {
  frames: { data: number; poke: number; other: number; bad: number };
  /** `other` frames by event name (`rule`, `connection`, …). */
  otherEvents: Record<string, number>;
  /** Main-stream connections opened. */
  connects: number;
  /** Main-stream connections opened after the first one. */
  reconnects: number;
  /** 422 answers (rebalancing) from stream or replay. */
  rebalancing: number;
  /** Other failed opens and dropped connections. */
  errors: number;
  staleDetections: number;
  idleDrops: number;
  replays: number;
  replaysCaughtUp: number;
  /** Replays this connection left to one another connection of the organization was running. */
  replaysShared: number;
  /** Replayed data frames created before what this connection had committed: already stored, not written again. */
  replaySkipped: number;
  /** Gaps reported (`onGap`): unclean ends and replays that could not fill theirs. */
  gaps: number;
  /** Unclean ends of the stream (a subset of `gaps`). */
  uncleanEnds: number;
  /** 429 answers to a connect or replay. */
  rateLimited: number;
  commits: number;
  committedFrames: number;
  /** Commits that failed (each closed the connection and was retried). */
  commitFailures: number;
}
