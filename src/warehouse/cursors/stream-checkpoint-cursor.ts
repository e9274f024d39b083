/**
 * `stream:checkpoint:<stream name>:<slot>`: one connection's stream checkpoint (StreamCheckpoint, plus
 * the stream id and slot it was written by). Every connection (slot 0..2) of a stream has its own,
 * because each connection sees its own disconnects: a shared cursor would let a live connection erase
 * the gap another one just opened. A field of the wrong type reads as absent; the others are kept.
 */
import { z } from 'zod';
import { REPLAY_GAP_REASONS, type StreamCheckpoint, UNCLEAN_END_REASONS } from '../../stream/types.ts';
import { defineCursor } from './define-cursor.ts';

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
