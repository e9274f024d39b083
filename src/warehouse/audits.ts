/**
 * The completeness audit's tables (migration 0018) and the reads a cell's comparison needs. An audit run
 * (`validic_sync.audits`) keeps running totals, updated in the statement that records each cell, so
 * `status` and `/metrics` sum a few run rows instead of every cell. Every read here is on an index:
 * records by (org_id, id) and (org_id, uid, start_time), cells by (org_id, stratum, audited_at), the
 * ledger's done windows by (org_id, uid, resource, start_date), recent polls by (org_id, uid).
 * Why and how: src/audit/README.md.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';
import { isPollable } from './recent-polls.ts';

export type AuditKind = 'command' | 'schedule';

/** all: a command run's cell; recent: the window ending today; history: an older window (a tick's). */
export type AuditStratum = 'all' | 'recent' | 'history';

/** A cell: one user × resource × ≤ 30-day window. */
export interface AuditCell {
  uid: string;
  resource: string;
  startDate: string;
  endDate: string;
  stratum: AuditStratum;
}

/** One record version, as either side of a cell's comparison holds it. */
export interface AuditVersion {
  id: string;
  checksum: string;
  createdAt: string;
  deletedAt: string | null;
}

export interface NewAudit {
  orgId: string;
  kind: AuditKind;
  rangeFrom: string;
  rangeTo: string;
  sample: number;
  seed: string;
  population: number;
  /** A tick's stratum populations (null for a command run). */
  strata?: { recent: number; history: number } | null;
  planned: number;
  repair: boolean;
  /** Who runs it (run-heartbeats.ts). */
  holder?: string;
}

export async function startAudit(db: Kysely<Database>, audit: NewAudit): Promise<number> {
  const row = await db
    .insertInto('validic_sync.audits')
    .values({
      org_id: audit.orgId,
      kind: audit.kind,
      range_from: audit.rangeFrom,
      range_to: audit.rangeTo,
      sample: audit.sample,
      seed: audit.seed,
      population: audit.population,
      population_recent: audit.strata?.recent ?? null,
      population_history: audit.strata?.history ?? null,
      planned: audit.planned,
      repair: audit.repair,
      holder: audit.holder ?? null,
      heartbeat_at: sql`now()`,
      // A run that drew no cell (no users yet) is over as it starts.
      ...(audit.planned === 0 ? { ended_at: new Date() } : {}),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/**
 * One audited cell's findings. `unsynced`: a tick's cell whose days no sync had covered yet (not fetched,
 * not judged: see cellSyncCovered).
 */
export interface AuditedCell extends AuditCell {
  outcome: 'complete' | 'drift' | 'failed' | 'unsynced';
  platformRecords: number;
  equal: number;
  missing: number;
  stale: number;
  extra: number;
  repaired: number;
  /** Ids of the missing, stale and extra records (the first 50). */
  driftIds: string[];
  /** Missing or stale records the repair loaded that still differ, each as `id: why` (none expected). */
  unrepaired?: string[];
  error?: string;
}

/** `uid|resource|startDate` of the cells the run has recorded: a retried job skips them. */
export async function auditedCellKeys(db: Kysely<Database>, auditId: number): Promise<Set<string>> {
  const rows = await db
    .selectFrom('validic_sync.audit_cells')
    .select(['uid', 'resource', 'start_date'])
    .where('audit_id', '=', auditId)
    .execute();
  return new Set(
    rows.map((r) => auditCellKey({ uid: r.uid, resource: r.resource, startDate: r.start_date })),
  );
}

export const auditCellKey = (cell: Pick<AuditCell, 'uid' | 'resource' | 'startDate'>) =>
  `${cell.uid}|${cell.resource}|${cell.startDate}`;

/**
 * Records a cell and adds it to its run's totals in one statement; a cell recorded before (a retried
 * job) changes nothing. The run ends (`ended_at`) with its last planned cell.
 */
export async function recordAuditCell(
  db: Kysely<Database>,
  auditId: number,
  orgId: string,
  cell: AuditedCell,
): Promise<void> {
  const is = (outcome: AuditedCell['outcome']) => (cell.outcome === outcome ? 1 : 0);
  await sql`
    with inserted as (
      insert into validic_sync.audit_cells
        (audit_id, org_id, uid, resource, start_date, end_date, stratum, outcome, platform_records,
         equal, missing, stale, extra, repaired, drift_ids, error)
      values (${auditId}, ${orgId}, ${cell.uid}, ${cell.resource}, ${cell.startDate}, ${cell.endDate},
        ${cell.stratum}, ${cell.outcome}, ${cell.platformRecords}, ${cell.equal}, ${cell.missing},
        ${cell.stale}, ${cell.extra}, ${cell.repaired}, ${cell.driftIds.slice(0, 50)}::text[], ${cell.error ?? null})
      on conflict do nothing
      returning 1
    )
    update validic_sync.audits a set
      cells_complete = cells_complete + ${is('complete')},
      cells_drift = cells_drift + ${is('drift')},
      cells_failed = cells_failed + ${is('failed')},
      cells_unsynced = cells_unsynced + ${is('unsynced')},
      records_equal = records_equal + ${cell.equal},
      records_missing = records_missing + ${cell.missing},
      records_stale = records_stale + ${cell.stale},
      records_extra = records_extra + ${cell.extra},
      records_repaired = records_repaired + ${cell.repaired},
      ended_at = case
        when cells_complete + cells_drift + cells_failed + cells_unsynced + 1 >= planned then now()
        else ended_at end
    where a.id = ${auditId} and exists (select 1 from inserted)`.execute(db);
}

/**
 * The first day the warehouse is meant to hold for the whole org: the earliest `from` of its org-wide
 * backfill runs (not those of some users, such as new users' history). Undefined when none ran.
 */
export async function auditCoverageStart(db: Kysely<Database>, orgId: string): Promise<string | undefined> {
  const { rows } = await sql<{ from: string | null }>`
    select min(args->>'from') as from from validic_sync.runs
    where org_id = ${orgId} and command = 'backfill'
      and (args->'uids' is null or jsonb_typeof(args->'uids') = 'null')`.execute(db);
  return rows[0]?.from ?? undefined;
}

/** The warehouse's current version of each of `ids` (any date), for a cell's comparison. */
export async function currentVersions(
  db: Kysely<Database>,
  orgId: string,
  ids: readonly string[],
): Promise<Map<string, AuditVersion>> {
  if (ids.length === 0) return new Map();
  const { rows } = await sql<{ id: string; checksum: string; created_at: Date; deleted_at: Date | null }>`
    select id, checksum, created_at, deleted_at from validic.records
    where org_id = ${orgId} and id = any(${[...ids]}::text[])`.execute(db);
  return new Map(
    rows.map((r) => [
      r.id,
      {
        id: r.id,
        checksum: r.checksum,
        createdAt: r.created_at.toISOString(),
        deletedAt: r.deleted_at ? r.deleted_at.toISOString() : null,
      },
    ]),
  );
}

/**
 * Ids of the user's records of `type`, not deleted, whose UTC start date lies in [fromDate, toDate]
 * (a cell's inner days): what the platform should have returned too.
 */
export async function liveRecordIds(
  db: Kysely<Database>,
  orgId: string,
  uid: string,
  type: string,
  fromDate: string,
  toDate: string,
): Promise<string[]> {
  if (fromDate > toDate) return [];
  const { rows } = await sql<{ id: string }>`
    select id from validic.records
    where org_id = ${orgId} and uid = ${uid} and type = ${type}
      and start_time >= ${fromDate}::date and start_time < ${toDate}::date + 1
      and deleted_at is null`.execute(db);
  return rows.map((r) => r.id);
}

/**
 * The pollable users at `ranks` (0-based, uid byte order, users_pollable_idx): the users a tick drew by
 * rank. One pass over the pollable users' index, returning only the ranks asked for; a rank past the end
 * (users removed since they were counted) has no entry.
 */
export async function pollableUidsAtRanks(
  db: Kysely<Database>,
  orgId: string,
  ranks: readonly number[],
): Promise<Map<number, string>> {
  if (ranks.length === 0) return new Map();
  const { rows } = await sql<{ rank: number; uid: string }>`
    select rank::int as rank, uid from (
      select uid, row_number() over (order by uid collate "C") - 1 as rank
      from validic.users u where org_id = ${orgId} and ${isPollable('u')}
    ) ranked
    where rank = any(${[...new Set(ranks)]}::bigint[])`.execute(db);
  return new Map(rows.map((r) => [Number(r.rank), r.uid]));
}

/**
 * Whether some sync has covered a scheduled cell's days, so that what the warehouse lacks there is drift
 * and not work still to do (src/audit/README.md, "Only what some sync has covered"):
 *
 * - recent: the recent poll has polled the user (every resource, its lookback up to the poll), or a
 *   backfill has loaded days of the cell's window for this user and resource; later days are the stream's.
 * - history: every day of the window lies in a done backfill window of this user and resource.
 */
export async function cellSyncCovered(
  db: Kysely<Database>,
  orgId: string,
  cell: AuditCell,
): Promise<boolean> {
  if (cell.stratum === 'recent') {
    const { rows } = await sql<{ covered: boolean }>`
      select exists (select 1 from validic_sync.recent_polls
                     where org_id = ${orgId} and uid = ${cell.uid} and polled_at is not null)
          or exists (select 1 from validic_sync.backfill_windows
                     where org_id = ${orgId} and uid = ${cell.uid} and resource = ${cell.resource}
                       and status = 'done' and start_date <= ${cell.endDate}::date
                       and end_date >= ${cell.startDate}::date) as covered`.execute(db);
    return rows[0]?.covered === true;
  }
  const { rows } = await sql<{ covered: boolean }>`
    select not exists (
      select 1 from generate_series(${cell.startDate}::date, ${cell.endDate}::date, interval '1 day') d(day)
      where not exists (select 1 from validic_sync.backfill_windows
                        where org_id = ${orgId} and uid = ${cell.uid} and resource = ${cell.resource}
                          and status = 'done' and start_date <= d.day and end_date >= d.day)) as covered`.execute(
    db,
  );
  return rows[0]?.covered === true;
}

/** A run as stored: its design (NewAudit, less the org) and what its cells found so far. */
export interface AuditRunRow extends Omit<NewAudit, 'orgId' | 'strata' | 'holder'> {
  strata: { recent: number; history: number } | null;
  holder: string | null;
  heartbeatAt: string | null;
  /** Ended before its last cell (its command stopped). */
  interrupted: boolean;
  id: number;
  startedAt: string;
  endedAt: string | null;
  totals: AuditTotals;
}

export interface AuditTotals {
  /** unsynced: a tick's cells whose days no sync had covered yet (not judged). */
  cells: { complete: number; drift: number; failed: number; unsynced: number };
  records: { equal: number; missing: number; stale: number; extra: number; repaired: number };
}

const totalsOf = (r: Record<string, unknown>): AuditTotals => ({
  cells: {
    complete: Number(r.cells_complete ?? 0),
    drift: Number(r.cells_drift ?? 0),
    failed: Number(r.cells_failed ?? 0),
    unsynced: Number(r.cells_unsynced ?? 0),
  },
  records: {
    equal: Number(r.records_equal ?? 0),
    missing: Number(r.records_missing ?? 0),
    stale: Number(r.records_stale ?? 0),
    extra: Number(r.records_extra ?? 0),
    repaired: Number(r.records_repaired ?? 0),
  },
});

const iso = (value: unknown) => (value ? new Date(value as Date).toISOString() : null);

export async function readAudit(db: Kysely<Database>, auditId: number): Promise<AuditRunRow | undefined> {
  const row = await db
    .selectFrom('validic_sync.audits')
    .selectAll()
    .where('id', '=', auditId)
    .executeTakeFirst();
  return row ? toRun(row) : undefined;
}

function toRun(row: Record<string, unknown>): AuditRunRow {
  return {
    id: Number(row.id),
    kind: row.kind as AuditKind,
    rangeFrom: String(row.range_from),
    rangeTo: String(row.range_to),
    sample: Number(row.sample),
    seed: String(row.seed),
    population: Number(row.population),
    strata:
      row.population_recent == null
        ? null
        : { recent: Number(row.population_recent), history: Number(row.population_history ?? 0) },
    planned: Number(row.planned),
    repair: Boolean(row.repair),
    startedAt: iso(row.started_at)!,
    endedAt: iso(row.ended_at),
    holder: row.holder == null ? null : String(row.holder),
    heartbeatAt: iso(row.heartbeat_at),
    interrupted: Boolean(row.interrupted),
    totals: totalsOf(row),
  };
}

/** The org's newest audit run (of `kind`, when given), if any. */
export async function readLastAudit(
  db: Kysely<Database>,
  orgId: string,
  kind?: AuditKind,
): Promise<AuditRunRow | undefined> {
  let query = db.selectFrom('validic_sync.audits').selectAll().where('org_id', '=', orgId);
  if (kind) query = query.where('kind', '=', kind);
  const row = await query.orderBy('started_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
  return row ? toRun(row) : undefined;
}

/** What the org's audit runs found since `since` (all time when absent): sums of the run rows. */
export async function auditTotalsSince(
  db: Kysely<Database>,
  orgId: string,
  since?: Date,
): Promise<AuditTotals> {
  const { rows } = await sql<Record<string, unknown>>`
    select sum(cells_complete) cells_complete, sum(cells_drift) cells_drift, sum(cells_failed) cells_failed,
      sum(cells_unsynced) cells_unsynced, sum(records_equal) records_equal, sum(records_missing) records_missing, sum(records_stale) records_stale,
      sum(records_extra) records_extra, sum(records_repaired) records_repaired
    from validic_sync.audits
    where org_id = ${orgId} ${since ? sql`and started_at >= ${since}` : sql``}`.execute(db);
  return totalsOf(rows[0] ?? {});
}

/** The fleet's audit totals per org (for `/metrics`): one grouped read of the run rows. */
export async function auditTotalsByOrg(db: Kysely<Database>): Promise<Map<string, AuditTotals>> {
  const { rows } = await sql<Record<string, unknown>>`
    select org_id, sum(cells_complete) cells_complete, sum(cells_drift) cells_drift, sum(cells_failed) cells_failed,
      sum(cells_unsynced) cells_unsynced, sum(records_equal) records_equal, sum(records_missing) records_missing, sum(records_stale) records_stale,
      sum(records_extra) records_extra, sum(records_repaired) records_repaired
    from validic_sync.audits group by org_id`.execute(db);
  return new Map(rows.map((r) => [String(r.org_id), totalsOf(r)]));
}

export interface AuditDriftDay {
  /** UTC day the cells were audited. */
  day: string;
  /** Cells fetched and compared (or failed); a tick's cells not yet synced are `unsynced`. */
  cells: number;
  unsynced: number;
  drift: number;
  missing: number;
  stale: number;
  extra: number;
  repaired: number;
}

/** Cells audited and drift found per UTC day since `since`, newest first. */
export async function auditDriftPerDay(
  db: Kysely<Database>,
  orgId: string,
  since: Date,
): Promise<AuditDriftDay[]> {
  const { rows } = await sql<Record<string, unknown>>`
    select to_char(audited_at at time zone 'UTC', 'YYYY-MM-DD') as day,
      count(*) filter (where outcome <> 'unsynced') cells, count(*) filter (where outcome = 'unsynced') unsynced,
      count(*) filter (where outcome = 'drift') drift, sum(missing) missing, sum(stale) stale,
      sum(extra) extra, sum(repaired) repaired
    from validic_sync.audit_cells
    where org_id = ${orgId} and stratum in ('all', 'recent', 'history') and audited_at >= ${since}
    group by 1 order by 1 desc`.execute(db);
  return rows.map((r) => ({
    day: String(r.day),
    cells: Number(r.cells),
    unsynced: Number(r.unsynced),
    drift: Number(r.drift),
    missing: Number(r.missing),
    stale: Number(r.stale),
    extra: Number(r.extra),
    repaired: Number(r.repaired),
  }));
}

/** A stratum's cells over a span, as its estimate takes them (src/audit/stratum-estimate.ts). */
export interface StratumSample {
  /** Distinct cells judged (found synced at least once). */
  sampled: number;
  /** Of those, the cells whose first judged audit found them complete. */
  complete: number;
  /** Distinct cells drawn that no audit of the span found synced. */
  unsynced: number;
}

/**
 * The scheduled cells of a stratum audited since `since`, as the estimate takes them
 * (src/audit/stratum-estimate.ts, `summarizeStratum`, the same definition): distinct cells of the
 * stratum's unit (recent: uid × resource; history: uid × resource × window), each judged by its first
 * audit that found it synced; failed audits left out; cells no audit found synced counted apart.
 */
export async function stratumSample(
  db: Kysely<Database>,
  orgId: string,
  stratum: Exclude<AuditStratum, 'all'>,
  since: Date,
): Promise<StratumSample> {
  const { rows } = await sql<{ sampled: number; complete: number; unsynced: number }>`
    select count(*) filter (where judged is not null) sampled,
      count(*) filter (where judged = 'complete') complete,
      count(*) filter (where judged is null) unsynced
    from (
      select (array_agg(outcome order by audited_at, audit_id) filter (where outcome <> 'unsynced'))[1] judged
      from validic_sync.audit_cells
      where org_id = ${orgId} and stratum = ${stratum} and audited_at >= ${since} and outcome <> 'failed'
      group by uid, resource${stratum === 'recent' ? sql`` : sql`, start_date`}
    ) cells`.execute(db);
  return {
    sampled: Number(rows[0]?.sampled ?? 0),
    complete: Number(rows[0]?.complete ?? 0),
    unsynced: Number(rows[0]?.unsynced ?? 0),
  };
}

/** A run's cells with drift (at most `limit`), for the command's report. */
export async function readDriftCells(
  db: Kysely<Database>,
  auditId: number,
  limit: number,
): Promise<AuditedCell[]> {
  const rows = await db
    .selectFrom('validic_sync.audit_cells')
    .selectAll()
    .where('audit_id', '=', auditId)
    .where('outcome', '=', 'drift')
    .orderBy('uid')
    .orderBy('resource')
    .orderBy('start_date')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    uid: r.uid,
    resource: r.resource,
    startDate: r.start_date,
    endDate: r.end_date,
    stratum: r.stratum as AuditStratum,
    outcome: 'drift',
    platformRecords: Number(r.platform_records),
    equal: Number(r.equal),
    missing: Number(r.missing),
    stale: Number(r.stale),
    extra: Number(r.extra),
    repaired: Number(r.repaired),
    driftIds: r.drift_ids ?? [],
  }));
}
