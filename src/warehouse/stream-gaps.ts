/**
 * `validic_sync.stream_gaps`: spans of platform time in which the stream may have lost events (an unclean
 * end of a connection, a replay that could not fill its gap), open until a pass of the reconciliation
 * stream covers them (reconcile-passes.ts). Recording is idempotent: the same gap reported again (by a
 * restart that finds it in the connection's checkpoint) is one row.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

export type GapHandledBy = 'reconcile' | 'rest' | 'planned';

export interface NewStreamGap {
  orgId: string;
  streamName: string;
  slot: number;
  from: string;
  to: string;
  reason: string;
  handledBy: GapHandledBy;
}

export interface StoredStreamGap {
  id: number;
  streamName: string;
  slot: number;
  from: string;
  to: string;
  reason: string;
  recordedAt: string;
  handledBy: GapHandledBy;
  coveredAt: string | null;
}

/** Records a gap; returns its id, and whether it was new (false: the same gap was recorded before). */
export async function recordStreamGap(
  db: Kysely<Database>,
  gap: NewStreamGap,
): Promise<{ id: number; created: boolean }> {
  const inserted = await db
    .insertInto('validic_sync.stream_gaps')
    .values({
      org_id: gap.orgId,
      stream_name: gap.streamName,
      slot: gap.slot,
      gap_from: gap.from,
      gap_to: gap.to,
      reason: gap.reason,
      handled_by: gap.handledBy,
    })
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted) return { id: inserted.id, created: true };
  const existing = await db
    .selectFrom('validic_sync.stream_gaps')
    .select('id')
    .where('org_id', '=', gap.orgId)
    .where('stream_name', '=', gap.streamName)
    .where('slot', '=', gap.slot)
    .where('reason', '=', gap.reason)
    .where('gap_from', '=', new Date(gap.from))
    .where('gap_to', '=', new Date(gap.to))
    .executeTakeFirstOrThrow();
  return { id: existing.id, created: false };
}

const iso = (value: Date | string | null): string | null =>
  value === null ? null : value instanceof Date ? value.toISOString() : new Date(value).toISOString();

/** The open gaps of an org, oldest first (at most `limit`), and how many are open in all. */
export async function readOpenStreamGaps(
  db: Kysely<Database>,
  orgId: string,
  limit = 20,
): Promise<{ open: number; gaps: StoredStreamGap[] }> {
  const rows = await db
    .selectFrom('validic_sync.stream_gaps')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('covered_at', 'is', null)
    .orderBy('gap_from')
    .limit(limit)
    .execute();
  const count = await db
    .selectFrom('validic_sync.stream_gaps')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('org_id', '=', orgId)
    .where('covered_at', 'is', null)
    .executeTakeFirstOrThrow();
  return {
    open: Number(count.n),
    gaps: rows.map((r) => ({
      id: r.id,
      streamName: r.stream_name,
      slot: r.slot,
      from: iso(r.gap_from)!,
      to: iso(r.gap_to)!,
      reason: r.reason,
      recordedAt: iso(r.recorded_at)!,
      handledBy: r.handled_by as GapHandledBy,
      coveredAt: iso(r.covered_at),
    })),
  };
}

/** Gaps recorded since `since` (all of them, open or covered), for the summary of a run. */
export async function countStreamGapsSince(
  db: Kysely<Database>,
  orgId: string,
  since: Date,
): Promise<number> {
  const row = await db
    .selectFrom('validic_sync.stream_gaps')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('org_id', '=', orgId)
    .where('recorded_at', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Marks covered every open gap of the org that lies within what a pass re-delivered: from the start of
 * its chain of passes (`chainFrom`) up to where it caught up (`reachTo`). Returns how many.
 */
export async function coverStreamGaps(
  db: Kysely<Database>,
  orgId: string,
  passId: number,
  chainFrom: string,
  reachTo: string,
): Promise<number> {
  const result = await db
    .updateTable('validic_sync.stream_gaps')
    .set({ covered_at: sql<Date>`now()`, covered_by_pass: passId })
    .where('org_id', '=', orgId)
    .where('covered_at', 'is', null)
    .where('gap_from', '>=', new Date(chainFrom))
    .where('gap_to', '<=', new Date(reachTo))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
