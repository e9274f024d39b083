/**
 * `validic_sync.reconcile_passes`: each pass of the reconciliation stream, what it re-delivered and how
 * much of it the primary stream had missed (inserted + updated: the measured loss). A pass's row is
 * written when it starts and updated after each batch, so a pass whose process dies still shows what it
 * landed (outcome `running` with no `ended_at`).
 */
import { type Kysely, sql } from 'kysely';
import type { LoadCounts } from '../pipeline/batch.ts';
import type { Database } from './database.ts';

export type PassTrigger = 'schedule' | 'gap' | 'command';
export type PassOutcomeValue = 'running' | 'caught-up' | 'timed-out' | 'failed' | 'stopped';

export interface ReconcilePassRow {
  id: number;
  streamName: string;
  streamId: string;
  trigger: PassTrigger;
  startedAt: string;
  endedAt: string | null;
  outcome: PassOutcomeValue;
  chainFrom: string;
  reachFrom: string;
  reachTo: string | null;
  frames: number;
  /** Record versions and connection events the warehouse held nowhere: what the primary missed. */
  missed: number;
  counts: LoadCounts;
}

const iso = (value: Date | string | null): string | null =>
  value === null ? null : value instanceof Date ? value.toISOString() : new Date(value).toISOString();

type Row = Database['validic_sync.reconcile_passes'] extends infer T ? { [K in keyof T]: unknown } : never;

function toPass(r: Record<keyof Row, unknown>): ReconcilePassRow {
  return {
    id: Number(r.id),
    streamName: String(r.stream_name),
    streamId: String(r.stream_id),
    trigger: r.trigger as PassTrigger,
    startedAt: iso(r.started_at as Date)!,
    endedAt: iso(r.ended_at as Date | null),
    outcome: r.outcome as PassOutcomeValue,
    chainFrom: iso(r.chain_from as Date)!,
    reachFrom: iso(r.reach_from as Date)!,
    reachTo: iso(r.reach_to as Date | null),
    frames: Number(r.frames),
    missed: Number(r.missed),
    counts: {
      inserted: Number(r.inserted),
      updated: Number(r.updated),
      unchanged: Number(r.unchanged),
      stale: Number(r.stale),
      quarantined: Number(r.quarantined),
    },
  };
}

/** The org's newest pass over the reconciliation stream named `streamName`, if any. */
export async function readLastReconcilePass(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
): Promise<ReconcilePassRow | undefined> {
  const row = await db
    .selectFrom('validic_sync.reconcile_passes')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('stream_name', '=', streamName)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? toPass(row) : undefined;
}

export interface NewReconcilePass {
  orgId: string;
  streamName: string;
  streamId: string;
  trigger: PassTrigger;
  startedAt: string;
  chainFrom: string;
  reachFrom: string;
}

export async function startReconcilePass(db: Kysely<Database>, pass: NewReconcilePass): Promise<number> {
  const row = await db
    .insertInto('validic_sync.reconcile_passes')
    .values({
      org_id: pass.orgId,
      stream_name: pass.streamName,
      stream_id: pass.streamId,
      trigger: pass.trigger,
      started_at: pass.startedAt,
      outcome: 'running',
      chain_from: pass.chainFrom,
      reach_from: pass.reachFrom,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export interface ReconcilePassProgress {
  frames: number;
  counts: LoadCounts;
  /** Record versions and connection events the warehouse held nowhere before the pass brought them. */
  missed: number;
  /** Set when the pass ends. */
  outcome?: Exclude<PassOutcomeValue, 'running'>;
  endedAt?: string;
  reachTo?: string | null;
}

export async function updateReconcilePass(
  db: Kysely<Database>,
  id: number,
  progress: ReconcilePassProgress,
): Promise<void> {
  const { counts } = progress;
  await db
    .updateTable('validic_sync.reconcile_passes')
    .set({
      frames: progress.frames,
      missed: progress.missed,
      inserted: counts.inserted,
      updated: counts.updated,
      unchanged: counts.unchanged,
      stale: counts.stale,
      quarantined: counts.quarantined,
      ...(progress.outcome ? { outcome: progress.outcome } : {}),
      ...(progress.endedAt ? { ended_at: progress.endedAt } : {}),
      ...(progress.reachTo !== undefined ? { reach_to: progress.reachTo } : {}),
    })
    .where('id', '=', id)
    .execute();
}

export interface ReconcileTotals {
  passes: number;
  /** Record versions and events the passes brought that the warehouse held nowhere: what the primary missed. */
  missed: number;
  /** Records and events the passes read. */
  frames: number;
}

/** What the org's passes found since `since`. */
export async function reconcileTotalsSince(
  db: Kysely<Database>,
  orgId: string,
  since: Date,
): Promise<ReconcileTotals> {
  const row = await db
    .selectFrom('validic_sync.reconcile_passes')
    .select([
      (eb) => eb.fn.countAll<number>().as('passes'),
      sql<number>`coalesce(sum(missed), 0)`.as('missed'),
      sql<number>`coalesce(sum(frames), 0)`.as('frames'),
    ])
    .where('org_id', '=', orgId)
    .where('started_at', '>=', since)
    .executeTakeFirstOrThrow();
  return { passes: Number(row.passes), missed: Number(row.missed), frames: Number(row.frames) };
}
