/**
 * Keeps the gaps an org's stream could not fill by itself in the `stream:gaps` cursor, for `status` and
 * for whoever plans REST backfills. The cursor is only written through `applyBatch` (cursors move only
 * there); the read-modify-write is serialized per process, and the list is bounded.
 */
import { readCursor } from '../warehouse/checkpoints.ts';
import {
  type RecordedGap,
  type StreamGapsCursor,
  streamGapsCursor,
} from '../warehouse/cursors/stream-gaps-cursor.ts';
import { applyBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';

/** Most recent gaps kept in the cursor (older ones are only counted). */
export const MAX_GAPS_KEPT = 50;

let queue: Promise<unknown> = Promise.resolve();

export function recordStreamGap(
  warehouse: Warehouse,
  orgId: string,
  gap: RecordedGap,
): Promise<StreamGapsCursor> {
  const next = queue.then(async () => {
    const cursor = streamGapsCursor();
    const current = (await readCursor(warehouse.db, orgId, cursor)) ?? { total: 0, gaps: [] };
    const value: StreamGapsCursor = {
      total: current.total + 1,
      gaps: [...current.gaps, gap].slice(-MAX_GAPS_KEPT),
    };
    await applyBatch(
      warehouse,
      { orgId, arrivedVia: 'stream', items: [] },
      { cursors: [cursor.write(value)] },
    );
    return value;
  });
  queue = next.catch(() => {});
  return next;
}
