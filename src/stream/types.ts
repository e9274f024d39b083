/**
 * Types of the SSE module: frames off the wire, their classification, and the stream consumer's
 * injected dependencies, options, states and counters. Everything the consumer needs from the HTTP
 * client, the clock and the loader is injected through these types, so the module is tested alone.
 */

import type { Logger } from '../log/logger.ts';
import type { Clock } from '../time/clock.ts';
import type { StreamCursorValue, StreamGap } from '../warehouse/cursors.ts';

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

/**
 * What a frame means to the consumer. Its platform times come read: a data frame's `created_at`
 * (`createdAtMs`), a poke's `ts` (`tsMs`: the platform's clock when it poked).
 */
export type ClassifiedFrame =
  | { kind: 'data'; payload: unknown; createdAt: string | undefined; createdAtMs: number | undefined }
  | { kind: 'poke'; payload: unknown; tsMs: number | undefined }
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

export type CommitReason = 'count' | 'bytes' | 'time' | 'state-change' | 'heartbeat' | 'stop' | 'retry';

export interface CommitMeta {
  via: StreamVia;
  /** Why this commit happened (size, age, state change, cursor heartbeat, stop). */
  reason: CommitReason;
}

/** A connected SSE response: its body, read as bytes, and the server's clock when it answered. */
export interface SseSource {
  body: AsyncIterable<Uint8Array>;
  /**
   * Takes no more bytes from the connection; `body` then yields what was received and ends. The consumer
   * calls it when it closes a connection, and reads the body to its end first: frames that reached us
   * are kept, whatever ended the connection. Without it, only the frames already parsed are kept.
   */
  stopReceiving?(): void;
  /**
   * The response's `Date` header (ms; the header has whole seconds): the platform's clock before its
   * first poke, so that a gap's times are on the platform's clock from the first moment.
   */
  serverTimeMs?: number | undefined;
}

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
  /** Writes the frames and the cursor in one transaction. `frames` may be empty (cursor only). */
  commit(frames: DataFrame[], cursor: StreamCursorValue, meta: CommitMeta): Promise<void>;
  loadCursor(): Promise<StreamCursorValue | null>;
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
