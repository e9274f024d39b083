/**
 * Names of the stream's cursors in `validic_sync.checkpoints` (per org). Every connection (slot) of a
 * stream has its own checkpoint, because each connection sees its own disconnects: a shared cursor
 * would let a live connection erase the gap another one just opened.
 */

/** Prefix of every stream cursor, for `status` (`listCursors(db, orgId, STREAM_CURSOR_PREFIX)`). */
export const STREAM_CURSOR_PREFIX = 'stream:';

/** Gaps the stream could not fill itself (beyond replay, replay refused, checkpoint expired). */
export const STREAM_GAPS_KEY = 'stream:gaps';

/** Prefix of the per-connection checkpoints of one stream name. */
export function streamCheckpointPrefix(streamName: string): string {
  return `stream:checkpoint:${streamName}:`;
}

/** The checkpoint of connection slot `slot` (0..2) of the stream named `streamName`. */
export function streamCheckpointKey(streamName: string, slot: number): string {
  return `${streamCheckpointPrefix(streamName)}${slot}`;
}
