/**
 * Keeps the gaps an org's stream could not fill by itself in the `stream:gaps` cursor, for `status` and
 * for whoever plans REST backfills. The cursor is only written through `applyBatch` (cursors move only
 * there); the read-modify-write is serialized per process, and the list is bounded.
 */

import { readCursor } from '../warehouse/checkpoints.ts';
import { applyBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import { STREAM_GAPS_KEY } from './stream-cursor-keys.ts';
import type { GapTooLong } from './types.ts';

/** Most recent gaps kept in the cursor (older ones are only counted). */
export const MAX_GAPS_KEPT = 50;

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
  /** The last `MAX_GAPS_KEPT`, oldest first. */
  gaps: RecordedGap[];
}

let queue: Promise<unknown> = Promise.resolve();

export function recordStreamGap(
  warehouse: Warehouse,
  orgId: string,
  gap: RecordedGap,
): Promise<StreamGapsCursor> {
  const next = queue.then(async () => {
    const current = (await readCursor<StreamGapsCursor>(warehouse.db, orgId, STREAM_GAPS_KEY)) ?? {
      total: 0,
      gaps: [],
    };
    const gaps = Array.isArray(current.gaps) ? current.gaps : [];
    const value: StreamGapsCursor = {
      total: (typeof current.total === 'number' ? current.total : gaps.length) + 1,
      gaps: [...gaps, gap].slice(-MAX_GAPS_KEPT),
    };
    await applyBatch(
      warehouse,
      { orgId, arrivedVia: 'stream', items: [] },
      { cursors: [{ key: STREAM_GAPS_KEY, value }] },
    );
    return value;
  });
  queue = next.catch(() => {});
  return next;
}
