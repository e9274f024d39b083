/**
 * `stream:checkpoint:<stream name>:<slot>`: one connection's stream checkpoint (StreamCheckpoint, plus
 * the stream id and slot it was written by). Every connection (slot 0..2) of a stream has its own,
 * because each connection sees its own disconnects: a shared cursor would let a live connection erase
 * the gap another one just opened. A field of the wrong type reads as absent; the others are kept.
 */
import { z } from 'zod';
import { defineCursor } from './define-cursor.ts';

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

/** Prefix of the per-connection checkpoints of one stream name (for `status`). */
export function streamCheckpointPrefix(streamName: string): string {
  return `stream:checkpoint:${streamName}:`;
}

/** Prefix of every stream's connection checkpoints. */
export const STREAM_CHECKPOINTS_PREFIX = 'stream:checkpoint:';

const optional = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);

const streamCheckpointValue = z.object({
  newestCreatedAt: optional(z.string()),
  lastLiveAt: optional(z.string()),
  lastDisconnectAt: optional(z.string()),
  platformOffsetMs: optional(z.number()),
  uncleanEnd: optional(
    z.object({
      from: z.string(),
      to: z.string(),
      reason: z.enum([...UNCLEAN_END_REASONS, ...REPLAY_GAP_REASONS]),
    }),
  ),
  streamId: optional(z.string()),
  slot: optional(z.number()),
}) satisfies z.ZodType<StreamCheckpoint>;

export const streamCheckpointCursor = defineCursor(
  (streamName: string, slot: number) => `${streamCheckpointPrefix(streamName)}${slot}`,
  streamCheckpointValue,
);
