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

/** How a frame reached us; becomes `records.arrived_via`. */
export type StreamVia = 'stream' | 'replay';

/**
 * An item handed to `commit`: a data frame's raw payload (record of any resource type or connection
 * event; the caller routes it by shape), or a bad frame to quarantine with its text and reason.
 */
export type DataFrame =
  | { kind: 'data'; payload: unknown; createdAt: string | undefined; receivedAt: number }
  | { kind: 'bad'; text: string; reason: string; receivedAt: number };

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
}

export type CommitReason = 'count' | 'time' | 'state-change' | 'heartbeat' | 'stop';

export interface CommitMeta {
  via: StreamVia;
  /** Why this commit happened (size, age, state change, checkpoint heartbeat, stop). */
  reason: CommitReason;
}

/** A connected SSE response. Only the body is needed; it is read as bytes. */
export interface SseSource {
  body: AsyncIterable<Uint8Array>;
}

export interface GapTooLong {
  /** ISO start of the part the consumer cannot fill itself (or that the stream cannot resume). */
  from: string;
  /** ISO end of that part. */
  to: string;
  /**
   * - `beyond-replay`: older than replay serves (`replayMaxDays`); the consumer replays from the
   *   earliest allowed date; [from, to) needs a REST backfill.
   * - `stream-checkpoint-expired`: longer than the platform keeps the stream checkpoint
   *   (`checkpointRetentionDays`); the consumer replays up to the present instead of up to T, so
   *   [from, to) is covered by replay; a REST backfill is optional belt and braces.
   * - `replay-timed-out`: no event with `created_at` ≥ T arrived within `replayTimeoutMs`; [from, to)
   *   needs a REST backfill.
   * - `replay-unavailable`: the replay endpoint refused (4xx other than 401/403/422) or failed
   *   `replayAttempts` times in a row; [from, to) needs a REST backfill.
   */
  reason: 'beyond-replay' | 'stream-checkpoint-expired' | 'replay-unavailable' | 'replay-timed-out';
}

export type StreamState = 'stopped' | 'connecting' | 'live' | 'stale' | 'backing_off' | 'replaying';

export type SseLog = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface StreamConsumerDeps {
  /** Opens `GET {streams}/streams/{id}/connect`. Throws with `status` 422 while rebalancing. */
  openStream(signal: AbortSignal): Promise<SseSource>;
  /** Opens `GET /replay?date=YYYY-MM-DD`. Same errors as `openStream`. */
  openReplay(date: string, signal: AbortSignal): Promise<SseSource>;
  /** Writes the frames and the checkpoint in one transaction. `frames` may be empty (checkpoint only). */
  commit(frames: DataFrame[], checkpoint: StreamCheckpoint, meta: CommitMeta): Promise<void>;
  loadCheckpoint(): Promise<StreamCheckpoint | null>;
  /** Called once per gap the consumer cannot fully fill itself; the caller plans a REST backfill. */
  onGapTooLong?(gap: GapTooLong): void | Promise<void>;
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
  /** Commit when this many frames are buffered. Default 500. */
  maxFrames: number;
  /** Commit when the oldest buffered frame is this old. Default 250. */
  maxWaitMs: number;
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
  /** Attempts per commit before `run` fails (a database blip should not lose frames held in memory). Default 5. */
  commitAttempts: number;
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
  gapsTooLong: number;
  commits: number;
  committedFrames: number;
}
