/**
 * The completeness audit's tables (migration 0018) and the reads a cell's comparison needs. An audit run
 * (`validic_sync.audits`) keeps running totals, updated in the statement that records each cell, so
 * `status` and `/metrics` sum a few run rows instead of every cell. Every read here is on an index:
 * records by (org_id, id) and (org_id, uid, start_time), cells by (org_id, stratum, audited_at).
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
  planned: number;
  repair: boolean;
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
      planned: audit.planned,
      repair: audit.repair,
      // A run that drew no cell (no users yet) is over as it starts.
      ...(audit.planned === 0 ? { ended_at: new Date() } : {}),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** One audited cell's findings. */
export interface AuditedCell extends AuditCell {
  outcome: 'complete' | 'drift' | 'failed';
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
      records_equal = records_equal + ${cell.equal},
      records_missing = records_missing + ${cell.missing},
      records_stale = records_stale + ${cell.stale},
      records_extra = records_extra + ${cell.extra},
      records_repaired = records_repaired + ${cell.repaired},
      ended_at = case
        when cells_complete + cells_drift + cells_failed + 1 >= planned then now() else ended_at end
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
 * The next `limit` pollable users after `afterUid` in uid order (byte order, users_pollable_idx), going
 * round to the first when the end is reached: the scheduled audit's rotation.
 */
export async function nextUsersInRotation(
  db: Kysely<Database>,
  orgId: string,
  afterUid: string | undefined,
  limit: number,
): Promise<string[]> {
  const read = async (after: string | undefined, n: number) => {
    const { rows } = await sql<{ uid: string }>`
      select uid from validic.users u
      where org_id = ${orgId} and ${isPollable('u')}
        ${after === undefined ? sql`` : sql`and uid collate "C" > ${after}`}
      order by uid collate "C" limit ${n}`.execute(db);
    return rows.map((r) => r.uid);
  };
  if (limit <= 0) return [];
  const first = await read(afterUid, limit);
  if (first.length === limit || afterUid === undefined) return first;
  const wrapped = await read(undefined, limit - first.length);
  return [...first, ...wrapped.filter((uid) => !first.includes(uid))];
}

/** A run as stored: its design (NewAudit, less the org) and what its cells found so far. */
export interface AuditRunRow extends Omit<NewAudit, 'orgId'> {
  id: number;
  startedAt: string;
  endedAt: string | null;
  totals: AuditTotals;
}

export interface AuditTotals {
  cells: { complete: number; drift: number; failed: number };
  records: { equal: number; missing: number; stale: number; extra: number; repaired: number };
}

const totalsOf = (r: Record<string, unknown>): AuditTotals => ({
  cells: {
    complete: Number(r.cells_complete ?? 0),
    drift: Number(r.cells_drift ?? 0),
    failed: Number(r.cells_failed ?? 0),
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
    planned: Number(row.planned),
    repair: Boolean(row.repair),
    startedAt: iso(row.started_at)!,
    endedAt: iso(row.ended_at),
    totals: totalsOf(row),
  };
}

/** The org's newest audit run, if any. */
export async function readLastAudit(db: Kysely<Database>, orgId: string): Promise<AuditRunRow | undefined> {
  const row = await db
    .selectFrom('validic_sync.audits')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
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
      sum(records_equal) records_equal, sum(records_missing) records_missing, sum(records_stale) records_stale,
      sum(records_extra) records_extra, sum(records_repaired) records_repaired
    from validic_sync.audits
    where org_id = ${orgId} ${since ? sql`and started_at >= ${since}` : sql``}`.execute(db);
  return totalsOf(rows[0] ?? {});
}

/** The fleet's audit totals per org (for `/metrics`): one grouped read of the run rows. */
export async function auditTotalsByOrg(db: Kysely<Database>): Promise<Map<string, AuditTotals>> {
  const { rows } = await sql<Record<string, unknown>>`
    select org_id, sum(cells_complete) cells_complete, sum(cells_drift) cells_drift, sum(cells_failed) cells_failed,
      sum(records_equal) records_equal, sum(records_missing) records_missing, sum(records_stale) records_stale,
      sum(records_extra) records_extra, sum(records_repaired) records_repaired
    from validic_sync.audits group by org_id`.execute(db);
  return new Map(rows.map((r) => [String(r.org_id), totalsOf(r)]));
}

export interface AuditDriftDay {
  /** UTC day the cells were audited. */
  day: string;
  cells: number;
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
    select to_char(audited_at at time zone 'UTC', 'YYYY-MM-DD') as day, count(*) cells,
      count(*) filter (where outcome = 'drift') drift, sum(missing) missing, sum(stale) stale,
      sum(extra) extra, sum(repaired) repaired
    from validic_sync.audit_cells
    where org_id = ${orgId} and stratum in ('all', 'recent', 'history') and audited_at >= ${since}
    group by 1 order by 1 desc`.execute(db);
  return rows.map((r) => ({
    day: String(r.day),
    cells: Number(r.cells),
    drift: Number(r.drift),
    missing: Number(r.missing),
    stale: Number(r.stale),
    extra: Number(r.extra),
    repaired: Number(r.repaired),
  }));
}

/**
 * The scheduled cells of a stratum audited since `since` (failed ones left out): how many, how many
 * complete. A cell audited twice in the span counts once, by its latest outcome.
 */
export async function stratumSample(
  db: Kysely<Database>,
  orgId: string,
  stratum: Exclude<AuditStratum, 'all'>,
  since: Date,
): Promise<{ sampled: number; complete: number }> {
  const { rows } = await sql<{ sampled: number; complete: number }>`
    select count(*) sampled, count(*) filter (where outcome = 'complete') complete from (
      select distinct on (uid, resource, start_date) outcome
      from validic_sync.audit_cells
      where org_id = ${orgId} and stratum = ${stratum} and audited_at >= ${since} and outcome <> 'failed'
      order by uid, resource, start_date, audited_at desc
    ) latest`.execute(db);
  return { sampled: Number(rows[0]?.sampled ?? 0), complete: Number(rows[0]?.complete ?? 0) };
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
