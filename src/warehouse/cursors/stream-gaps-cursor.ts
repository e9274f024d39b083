/**
 * `stream:gaps`: the gaps an org's stream could not fill by itself (beyond replay, replay refused,
 * checkpoint expired), for `status` and for whoever plans REST backfills (record-stream-gap.ts writes
 * it). A gap not of the shape below is dropped when read; a list that is not a list reads as empty.
 */
import { z } from 'zod';
import type { GapTooLong } from '../../stream/types.ts';
import { defineCursor } from './define-cursor.ts';

/** What `status` shows for one gap. */
export interface RecordedGap extends GapTooLong {
  streamName: string;
  slot: number;
  recordedAt: string;
  /** `enqueued`: a records.backfill job was queued for it; `planned`: no queue here, run `backfill`; `not-needed`: replay covers it. */
  backfill: 'enqueued' | 'planned' | 'not-needed';
}

export interface StreamGapsCursor {
  /** Gaps recorded since the cursor was created. */
  total: number;
  /** The last `MAX_GAPS_KEPT` (record-stream-gap.ts), oldest first. */
  gaps: RecordedGap[];
}

const recordedGap: z.ZodType<RecordedGap> = z.object({
  from: z.string(),
  to: z.string(),
  reason: z.enum(['beyond-replay', 'stream-checkpoint-expired', 'replay-unavailable', 'replay-timed-out']),
  streamName: z.string(),
  slot: z.number(),
  recordedAt: z.string(),
  backfill: z.enum(['enqueued', 'planned', 'not-needed']),
});

const streamGapsValue = z
  .object({
    total: z.number().optional().catch(undefined),
    gaps: z
      .array(z.unknown())
      .catch([])
      .transform((items) =>
        items.flatMap((item) => {
          const gap = recordedGap.safeParse(item);
          return gap.success ? [gap.data] : [];
        }),
      ),
  })
  .transform((v): StreamGapsCursor => ({ total: v.total ?? v.gaps.length, gaps: v.gaps }));

export const streamGapsCursor = defineCursor(() => 'stream:gaps', streamGapsValue);
