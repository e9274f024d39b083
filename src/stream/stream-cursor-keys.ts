/**
 * @deprecated The stream's cursors are kinds of src/warehouse/cursors/ now (`streamCheckpointCursor`,
 * `streamGapsCursor`). This key builder stays only for src/stream/run-org-stream.ts until it reads and
 * writes through `streamCheckpointCursor(name, slot)`; then delete this file.
 */
import { streamCheckpointCursor } from '../warehouse/cursors/stream-checkpoint-cursor.ts';

/** The checkpoint key of connection slot `slot` (0..2) of the stream named `streamName`. */
export function streamCheckpointKey(streamName: string, slot: number): string {
  return streamCheckpointCursor(streamName, slot).key;
}
