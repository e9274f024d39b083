/**
 * Maps committed stream/replay items onto the loader's batch items (src/pipeline/batch.ts): a data
 * frame's payload is a `frame` (routed by shape: record of any type or connection event), a bad frame
 * goes to quarantine as `unparseable` with its reason.
 */
import type { RawItem } from '../pipeline/batch.ts';
import type { DataFrame } from './types.ts';

export function toRawItems(frames: DataFrame[]): RawItem[] {
  return frames.map((frame) =>
    frame.kind === 'data'
      ? { kind: 'frame', raw: frame.payload }
      : { kind: 'unparseable', text: frame.text, reason: frame.reason },
  );
}
