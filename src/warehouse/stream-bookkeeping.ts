/**
 * The streams' bookkeeping in the warehouse: the gaps of the primary stream (validic_sync.stream_gaps),
 * the reconciliation passes, when the primary stream was last heard, and what a pass brought that the
 * warehouse held nowhere (the measured loss).
 */
import { type Kysely, sql } from 'kysely';
import type { LoadCounts } from '../pipeline/batch.ts';
import { MAX_STREAM_CONNECTIONS } from '../validic/platform-limits.ts';
import { readCursor, streamCursor } from './cursors.ts';
import type { Database } from './database.ts';

/**
 * `validic_sync.stream_gaps`: spans of platform time in which the stream may have lost events (an unclean
 * end of a connection, a replay that could not fill its gap), open until a pass of the reconciliation
 * stream covers them (stream-bookkeeping.ts). Recording is idempotent: the same gap reported again (by a
 * restart that finds it in the connection's cursor) is one row.
 */
export type GapHandledBy = 'reconcile' | 'replay' | 'rest' | 'planned';

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
export async function readAllOpenStreamGaps(db: Kysely<Database>, orgId: string): Promise<StoredStreamGap[]> {
  // Open gaps are few (each is a crash, a drop or a cut pass that nothing has delivered yet).
  return (await readOpenStreamGaps(db, orgId, 10_000)).gaps;
}

/** Whether the gap `id` is still open (not covered by any delivery). */
export async function isStreamGapOpen(db: Kysely<Database>, id: number): Promise<boolean> {
  const row = await db
    .selectFrom('validic_sync.stream_gaps')
    .select('covered_at')
    .where('id', '=', id)
    .executeTakeFirst();
  return row !== undefined && row.covered_at === null;
}

/** Who fills these gaps now (a pass that was cut leaves its own gaps and others to the replay). */
export async function setStreamGapsHandledBy(
  db: Kysely<Database>,
  ids: readonly number[],
  handledBy: GapHandledBy,
): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('validic_sync.stream_gaps')
    .set({ handled_by: handledBy })
    .where('id', 'in', [...ids])
    .where('covered_at', 'is', null)
    .execute();
}

/** The org's gaps, to narrow and select from. */
const gapsOf = (db: Kysely<Database>, orgId: string) =>
  db.selectFrom('validic_sync.stream_gaps').where('org_id', '=', orgId);

async function countGaps(gaps: ReturnType<typeof gapsOf>): Promise<number> {
  const row = await gaps.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function readOpenStreamGaps(
  db: Kysely<Database>,
  orgId: string,
  limit = 20,
): Promise<{ open: number; gaps: StoredStreamGap[] }> {
  const open = gapsOf(db, orgId).where('covered_at', 'is', null);
  const rows = await open.selectAll().orderBy('gap_from').limit(limit).execute();
  return {
    open: await countGaps(open),
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
  return await countGaps(gapsOf(db, orgId).where('recorded_at', '>=', since));
}

/**
 * Marks covered every open gap of the org that lies within what a delivery re-delivered without a break:
 * starting at or after `coverFrom` and ending at or before `reachTo`. Returns how many.
 */
export async function coverStreamGaps(
  db: Kysely<Database>,
  orgId: string,
  passId: number,
  coverFrom: string,
  reachTo: string,
): Promise<number> {
  const result = await db
    .updateTable('validic_sync.stream_gaps')
    .set({ covered_at: sql<Date>`now()`, covered_by_pass: passId })
    .where('org_id', '=', orgId)
    .where('covered_at', 'is', null)
    .where('gap_from', '>=', new Date(coverFrom))
    .where('gap_to', '<=', new Date(reachTo))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * `validic_sync.reconcile_passes`: each delivery (a pass of the reconciliation stream, or a replay of
 * gaps it cannot reach), what it re-delivered and how much of it the primary stream had missed (the
 * measured loss). A row is written when the delivery starts and updated after each batch and every 10 s
 * (`heartbeat_at`), so a delivery whose process dies still shows what it landed, and a later run finds it
 * (`readRunningDeliveries`) and marks it `interrupted`.
 */
export type PassTrigger = 'schedule' | 'gap' | 'command';
export type PassOutcomeValue = 'running' | 'caught-up' | 'timed-out' | 'failed' | 'stopped' | 'interrupted';
export type DeliverySource = 'stream' | 'replay';

export interface ReconcilePassRow {
  id: number;
  streamName: string;
  streamId: string;
  source: DeliverySource;
  trigger: PassTrigger;
  startedAt: string;
  endedAt: string | null;
  outcome: PassOutcomeValue;
  chainFrom: string;
  reachFrom: string;
  reachTo: string | null;
  /** From here to `reachTo` the delivery re-delivered without a break (null on rows before 0023). */
  coverFrom: string | null;
  committedTo: string | null;
  readTo: string | null;
  nextCoverFrom: string | null;
  host: string | null;
  pid: number | null;
  heartbeatAt: string | null;
  frames: number;
  /** Record versions and connection events the primary could not have committed: what it missed. */
  missed: number;
  counts: LoadCounts;
}

type Row = Database['validic_sync.reconcile_passes'] extends infer T ? { [K in keyof T]: unknown } : never;

function toPass(r: Record<keyof Row, unknown>): ReconcilePassRow {
  return {
    id: Number(r.id),
    streamName: String(r.stream_name),
    streamId: String(r.stream_id),
    source: (r.source ?? 'stream') as DeliverySource,
    trigger: r.trigger as PassTrigger,
    startedAt: iso(r.started_at as Date)!,
    endedAt: iso(r.ended_at as Date | null),
    outcome: r.outcome as PassOutcomeValue,
    chainFrom: iso(r.chain_from as Date)!,
    reachFrom: iso(r.reach_from as Date)!,
    reachTo: iso(r.reach_to as Date | null),
    coverFrom: iso((r.cover_from ?? null) as Date | null),
    committedTo: iso((r.committed_to ?? null) as Date | null),
    readTo: iso((r.read_to ?? null) as Date | null),
    nextCoverFrom: iso((r.next_cover_from ?? null) as Date | null),
    host: r.host === null || r.host === undefined ? null : String(r.host),
    pid: r.pid === null || r.pid === undefined ? null : Number(r.pid),
    heartbeatAt: iso((r.heartbeat_at ?? null) as Date | null),
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

/** The org's deliveries (passes and replays), to narrow. */
const deliveriesOf = (db: Kysely<Database>, orgId: string) =>
  db.selectFrom('validic_sync.reconcile_passes').selectAll().where('org_id', '=', orgId);

/** The newest of `deliveries`: the latest start, and of those started at once the later id. */
async function newestDelivery(
  deliveries: ReturnType<typeof deliveriesOf>,
): Promise<ReconcilePassRow | undefined> {
  const row = await deliveries
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? toPass(row) : undefined;
}

/**
 * The org's newest pass over the reconciliation stream named `streamName` that has ended (or was found
 * interrupted), if any: where the next pass goes on from.
 */
export async function readLastReconcilePass(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
): Promise<ReconcilePassRow | undefined> {
  return await newestDelivery(
    deliveriesOf(db, orgId).where('stream_name', '=', streamName).where('source', '=', 'stream'),
  );
}

/** The org's newest delivery of any source (for status and the reconcile command's replay). */
export async function readLastDelivery(
  db: Kysely<Database>,
  orgId: string,
): Promise<ReconcilePassRow | undefined> {
  return await newestDelivery(deliveriesOf(db, orgId));
}

/**
 * The org's deliveries still marked `running` (some may belong to processes that are gone), with how long
 * ago each last showed a sign of life, on the database's clock (the processes' clocks may differ).
 */
export async function readRunningDeliveries(
  db: Kysely<Database>,
  orgId: string,
): Promise<(ReconcilePassRow & { heartbeatAgeMs: number })[]> {
  const rows = await db
    .selectFrom('validic_sync.reconcile_passes')
    .selectAll()
    .select(
      sql<number>`extract(epoch from (now() - coalesce(heartbeat_at, started_at))) * 1000`.as(
        'heartbeat_age_ms',
      ),
    )
    .where('org_id', '=', orgId)
    .where('outcome', '=', 'running')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ ...toPass(r), heartbeatAgeMs: Number(r.heartbeat_age_ms) }));
}

export interface NewReconcilePass {
  orgId: string;
  streamName: string;
  streamId: string;
  source: DeliverySource;
  replayDate?: string;
  trigger: PassTrigger;
  startedAt: string;
  chainFrom: string;
  reachFrom: string;
  coverFrom: string;
  host: string;
  pid: number;
}

export async function startReconcilePass(db: Kysely<Database>, pass: NewReconcilePass): Promise<number> {
  const row = await db
    .insertInto('validic_sync.reconcile_passes')
    .values({
      org_id: pass.orgId,
      stream_name: pass.streamName,
      stream_id: pass.streamId,
      source: pass.source,
      replay_date: pass.replayDate ?? null,
      trigger: pass.trigger,
      started_at: pass.startedAt,
      outcome: 'running',
      chain_from: pass.chainFrom,
      reach_from: pass.reachFrom,
      cover_from: pass.coverFrom,
      committed_to: pass.coverFrom,
      host: pass.host,
      pid: pass.pid,
      heartbeat_at: sql<Date>`now()`,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export interface ReconcilePassProgress {
  frames: number;
  counts: LoadCounts;
  /** Record versions and connection events the primary could not have committed (judged so far). */
  missed: number;
  /** Everything the delivery read up to here (platform time) is committed. */
  committedTo?: string;
  /** From here the delivery re-delivers without a break (raised by a cut of one of its connections). */
  coverFrom?: string;
  /** Set when the delivery ends. */
  outcome?: Exclude<PassOutcomeValue, 'running'>;
  endedAt?: string;
  reachTo?: string | null;
  readTo?: string;
  nextCoverFrom?: string;
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
      heartbeat_at: sql<Date>`now()`,
      ...(progress.committedTo ? { committed_to: progress.committedTo } : {}),
      ...(progress.coverFrom ? { cover_from: progress.coverFrom } : {}),
      ...(progress.outcome ? { outcome: progress.outcome } : {}),
      ...(progress.endedAt ? { ended_at: progress.endedAt } : {}),
      ...(progress.reachTo !== undefined ? { reach_to: progress.reachTo } : {}),
      ...(progress.readTo ? { read_to: progress.readTo } : {}),
      ...(progress.nextCoverFrom ? { next_cover_from: progress.nextCoverFrom } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/** The delivery's process is alive: its row says so (between batches, every 10 s). */
export async function touchReconcilePass(db: Kysely<Database>, id: number): Promise<void> {
  await db
    .updateTable('validic_sync.reconcile_passes')
    .set({ heartbeat_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('outcome', '=', 'running')
    .execute();
}

/**
 * A delivery whose process is gone: `interrupted`, ended now, and (a stream pass) the next pass goes on
 * from `readTo`, since the reconciliation stream may have sent it anything up to then. Returns false when
 * the row was no longer running (its process ended it meanwhile).
 */
export async function markReconcilePassInterrupted(
  db: Kysely<Database>,
  id: number,
  readTo: string,
): Promise<boolean> {
  const result = await db
    .updateTable('validic_sync.reconcile_passes')
    .set({
      outcome: 'interrupted',
      ended_at: sql<Date>`now()`,
      read_to: readTo,
      next_cover_from: readTo,
    })
    .where('id', '=', id)
    .where('outcome', '=', 'running')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
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

/**
 * When an org's primary stream was last heard from: the newest `lastLiveAt` among its connection
 * cursors (at most 3 rows, read by primary key). A live connection writes it
 * with each commit and at least once a minute while only pokes arrive, whichever process holds it; the
 * recent poll's fallback reads it (src/budget/recent-poll.ts).
 */
export async function readStreamLastHeard(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
): Promise<number | undefined> {
  // Exact keys, not a prefix: the org's other cursors (one per user and resource) may be many.
  const keys = Array.from(
    { length: MAX_STREAM_CONNECTIONS },
    (_, slot) => streamCursor(streamName, slot).key,
  );
  const { rows } = await sql<{ last: string | null }>`
    select max(value->>'lastLiveAt') as last from validic_sync.checkpoints
    where org_id = ${orgId} and key in (${sql.join(keys)})`.execute(db);
  const last = rows[0]?.last;
  const ms = last ? Date.parse(last) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * The primary stream's cursors, one per connection slot, for a delivery that
 * judges what the primary could not have committed (src/stream/judge-missed.ts).
 */
export interface PrimarySlotCursor {
  slot: number;
  deliveryFrom?: string;
  connectedSince?: string;
  newestCreatedAt?: string;
  quietAt?: string;
  lastLiveAt?: string;
  lastDisconnectAt?: string;
  platformOffsetMs?: number;
}

export async function readPrimaryCursors(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
): Promise<PrimarySlotCursor[]> {
  const out: PrimarySlotCursor[] = [];
  for (let slot = 0; slot < MAX_STREAM_CONNECTIONS; slot++) {
    const value = await readCursor(db, orgId, streamCursor(streamName, slot));
    if (!value) continue;
    out.push({
      slot,
      ...(value.deliveryFrom ? { deliveryFrom: value.deliveryFrom } : {}),
      ...(value.connectedSince ? { connectedSince: value.connectedSince } : {}),
      ...(value.newestCreatedAt ? { newestCreatedAt: value.newestCreatedAt } : {}),
      ...(value.quietAt ? { quietAt: value.quietAt } : {}),
      ...(value.lastLiveAt ? { lastLiveAt: value.lastLiveAt } : {}),
      ...(value.lastDisconnectAt ? { lastDisconnectAt: value.lastDisconnectAt } : {}),
      ...(value.platformOffsetMs !== undefined ? { platformOffsetMs: value.platformOffsetMs } : {}),
    });
  }
  return out;
}

/**
 * The span of platform time the primary stream has delivered and committed, from its cursors: from when
 * its first connection started (`connectedSince`) to the least of what each connection committed through
 * (`newestCreatedAt`, `quietAt`). Undefined when the stream never ran. An event created inside it that the
 * warehouse lacks was missed by the stream; one outside it was not the stream's to deliver (a first
 * reconciliation over an empty warehouse finds no loss).
 */
export async function readPrimaryStreamSpan(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
): Promise<{ fromMs: number; throughMs: number } | undefined> {
  let fromMs = Infinity;
  let throughMs: number | undefined;
  for (const slot of await readPrimaryCursors(db, orgId, streamName)) {
    const from = Date.parse(slot.connectedSince ?? '');
    if (Number.isFinite(from)) fromMs = Math.min(fromMs, from);
    const marks = [Date.parse(slot.newestCreatedAt ?? ''), Date.parse(slot.quietAt ?? '')].filter(
      Number.isFinite,
    );
    if (marks.length > 0) throughMs = Math.min(throughMs ?? Infinity, Math.max(...marks));
  }
  if (throughMs === undefined) return undefined;
  // Cursors written before `connectedSince` existed: the stream's start is not known, so it is not bounded.
  return { fromMs: Number.isFinite(fromMs) ? fromMs : -Infinity, throughMs };
}

/** Which of some connection events the warehouse does not hold, by id. */
export async function absentConnectionEvents(
  db: Kysely<Database>,
  orgId: string,
  ids: readonly string[],
): Promise<Set<string>> {
  return (await absentVersions(db, orgId, [], ids)).events;
}

/**
 * Which of some record versions and connection events the warehouse holds nowhere: not as a record's
 * current version (validic.records), not as a kept older one (validic.record_versions), not as a stored
 * connection event. A reconciliation pass asks it of what it is about to load: the answer, counted once
 * per version whatever batch or connection brings it and in whatever order, is what the primary stream
 * missed. One round trip per batch, on the tables' primary keys.
 */
export interface VersionKey {
  id: string;
  checksum: string;
}

/** The versions and events of the lists that the warehouse holds nowhere (as `id\u0001checksum` / ids). */
export async function absentVersions(
  db: Kysely<Database>,
  orgId: string,
  versions: readonly VersionKey[],
  eventIds: readonly string[],
): Promise<{ versions: Set<string>; events: Set<string> }> {
  const key = (id: string, checksum: string) => `${id}\u0001${checksum}`;
  const absent = { versions: new Set(versions.map((v) => key(v.id, v.checksum))), events: new Set(eventIds) };
  if (versions.length > 0) {
    const ids = [...new Set(versions.map((v) => v.id))];
    const { rows } = await sql<{ id: string; checksum: string }>`
      select id, checksum from validic.records where org_id = ${orgId} and id = any(${ids}::text[])
      union all
      select record_id as id, checksum from validic.record_versions where org_id = ${orgId} and record_id = any(${ids}::text[])`.execute(
      db,
    );
    for (const r of rows) absent.versions.delete(key(r.id, r.checksum));
  }
  if (eventIds.length > 0) {
    const { rows } = await sql<{ id: string }>`
      select id from validic.connection_events where org_id = ${orgId} and id = any(${[...absent.events]}::text[])`.execute(
      db,
    );
    for (const r of rows) absent.events.delete(r.id);
  }
  return absent;
}
