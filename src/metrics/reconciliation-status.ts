/**
 * The stream's gaps and the reconciliation stream's passes as `status` shows them: the open gaps (spans
 * in which events may be missing until a pass covers them), the last pass, and what the passes found
 * missing over the last day and week: the product's measured loss rate.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import {
  type ReconcilePassRow,
  type ReconcileTotals,
  readLastReconcilePass,
  readOpenStreamGaps,
  reconcileTotalsSince,
  type StoredStreamGap,
} from '../warehouse/stream-bookkeeping.ts';

export interface StreamGapsStatus {
  /** Gaps no reconciliation pass has covered yet. */
  open: number;
  /** The oldest open ones (at most 10). */
  oldest: StoredStreamGap[];
}

export interface ReconciliationStatus {
  /** The reconciliation stream's name (it counts toward the platform's 5 streams per customer). */
  streamName: string | null;
  lastPass: ReconcilePassRow | null;
  last24h: ReconcileTotals;
  last7d: ReconcileTotals;
}

const DAY_MS = 86_400_000;

export async function readStreamGapsStatus(db: Kysely<Database>, orgId: string): Promise<StreamGapsStatus> {
  const { open, gaps } = await readOpenStreamGaps(db, orgId, 10);
  return { open, oldest: gaps };
}

export async function readReconciliationStatus(
  db: Kysely<Database>,
  orgId: string,
  streamName: string | null,
  now: Date,
): Promise<ReconciliationStatus> {
  return {
    streamName,
    lastPass: streamName ? ((await readLastReconcilePass(db, orgId, streamName)) ?? null) : null,
    last24h: await reconcileTotalsSince(db, orgId, new Date(now.getTime() - DAY_MS)),
    last7d: await reconcileTotalsSince(db, orgId, new Date(now.getTime() - 7 * DAY_MS)),
  };
}
