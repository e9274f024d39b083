/**
 * v2 records of every type, keyed (org_id, id), with the dedupe rules of DESIGN.md:
 * - same id and checksum: nothing is written (counted unchanged);
 * - different checksum: the later created_at wins, ties go to the greater checksum (so the outcome never
 *   depends on arrival order); the replaced version goes to record_versions;
 * - an older version arriving late is never applied (counted stale) and is kept in record_versions;
 * - a record's nested parts (metrics, segments, series) live on its own row, so they change with it;
 * - a delete wins even when its checksum equals the stored one (the platform's checksum need not cover
 *   `deleted_at`): a version carrying `deleted_at` replaces the same checksum without it, unless the
 *   stored version is newer (later created_at). The same deleted version again is unchanged.
 * So record_versions = every distinct (id, checksum) ever seen minus the current one, in any order (a
 * delete with the stored checksum replaces the row in place: no second row of that checksum).
 *
 * Phase 1 probes the stored versions with one keys-only query (a redelivered batch costs no more);
 * phase 2 COPYs only the rows to write into temp tables and applies them set-based.
 */
import { type RawBuilder, sql } from 'kysely';
import type { NormalizedRecord } from '../normalize/normalized-types.ts';
import type { Batch, LoadResult } from './batch.ts';
import type { EncodedCopyRow } from './copy-text-format.ts';
import { insertNewRecords } from './insert-new-records.ts';
import { bump } from './load-counts.ts';
import { sqlLiteral, type WarehouseTransaction } from './open-warehouse.ts';
import { RECORD_COLUMNS, recordRowValues } from './record-row.ts';
import { STAGE, stageRows } from './staging-tables.ts';

/** One version of a record as far as ordering goes. */
export interface VersionOrder {
  createdAt: string;
  checksum: string;
  /** Absent or null: not deleted. */
  deletedAt?: string | null;
}

/**
 * Total order of versions of one id: created_at, then checksum (code-unit order), then a deleted
 * version above the same version not deleted (a delete that keeps the checksum and the created_at
 * still wins, whatever order the two arrive in).
 */
export function isNewerVersion(a: VersionOrder, b: VersionOrder) {
  const ta = Date.parse(a.createdAt);
  const tb = Date.parse(b.createdAt);
  if (ta !== tb) return ta > tb;
  if (a.checksum !== b.checksum) return a.checksum > b.checksum;
  return isDeleted(a) && !isDeleted(b);
}

const isDeleted = (v: VersionOrder) => v.deletedAt !== undefined && v.deletedAt !== null;

type Action = 'insert' | 'update' | 'same' | 'stale';

interface ProbeRow {
  id: string;
  checksum: string;
  cur_checksum: string | null;
  cur_created_at: Date | string | null;
  cur_deleted: boolean | null;
  archived: boolean;
}

/**
 * The keys-only probe of `records` as one statement with literals only (no parameters), so that it
 * can ride in the transaction's first round trip, right after the locks (TransactionOptions.firstQuery).
 * Null when there is nothing to probe. Every id is looked up in each month's partition (an id alone does
 * not say its month); record_versions only for ids that are stored, since a version is archived only
 * beside a current row (a new id, the stream's usual case, then costs no version lookups at all).
 */
export function probeStatement(org: string, records: readonly NormalizedRecord[]): string | null {
  const pairs = new Map<string, { id: string; checksum: string }>();
  for (const { record: r } of records) pairs.set(versionKey(r.id, r.checksum), r);
  if (pairs.size === 0) return null;
  const list = [...pairs.values()];
  const array = (values: string[]) => `array[${values.map(sqlLiteral).join(',')}]::text[]`;
  const o = sqlLiteral(org);
  return `select k.id, k.checksum, cur.checksum as cur_checksum, cur.created_at as cur_created_at,
       cur.deleted_at is not null as cur_deleted,
       cur.id is not null and exists (select 1 from validic.record_versions v
               where v.org_id = ${o} and v.record_id = k.id and v.checksum = k.checksum) as archived
from unnest(${array(list.map((p) => p.id))}, ${array(list.map((p) => p.checksum))}) as k(id, checksum)
left join validic.records cur on cur.org_id = ${o} and cur.id = k.id`;
}

interface StoredVersion {
  checksum: string;
  createdAt: string;
  /** Only whether it is set matters here (see isNewerVersion). */
  deletedAt: string | null;
}

const versionKey = (id: string, checksum: string) => `${id}\u0001${checksum}`;

export async function loadRecords(
  tx: WarehouseTransaction,
  batch: Batch,
  records: NormalizedRecord[],
  result: LoadResult,
  /** Data-modifying CTEs to send with the fast path's statement; see the return value. */
  also: readonly RawBuilder<unknown>[] = [],
  /** The rows of probeStatement(org, records), when the caller already ran it. */
  probed?: readonly Record<string, unknown>[],
  /** COPY lines of the records encoded ahead (prepareBatch's `encodeAhead`). */
  encoded?: ReadonlyMap<NormalizedRecord, EncodedCopyRow>,
): Promise<{ sentAlso: boolean }> {
  if (records.length === 0) return { sentAlso: false };
  const org = batch.orgId;

  // Distinct versions per id, and the newest one (the candidate) per id.
  const versions = new Map<string, NormalizedRecord>();
  const winners = new Map<string, NormalizedRecord>();
  for (const r of records) {
    const key = versionKey(r.record.id, r.record.checksum);
    if (!versions.has(key)) versions.set(key, r);
    const best = winners.get(r.record.id);
    if (!best || isNewerVersion(r.record, best.record)) winners.set(r.record.id, r);
  }

  const distinct = [...versions.values()];
  // Phase 1, keys only (cheap even when the whole batch is a redelivery): the stored current version
  // of each id, and which of the batch's versions record_versions already holds. Normally already
  // run by the transaction's first round trip (see probeStatement).
  const probeRows = (probed ??
    (await sql.raw(probeStatement(org, records)!).execute(tx.db)).rows) as ProbeRow[];
  const stored = new Map<string, StoredVersion | null>();
  const archived = new Set<string>();
  for (const row of probeRows) {
    stored.set(
      row.id,
      row.cur_checksum === null
        ? null
        : {
            checksum: row.cur_checksum,
            createdAt: new Date(row.cur_created_at as Date | string).toISOString(),
            deletedAt: row.cur_deleted ? 'deleted' : null,
          },
    );
    if (row.archived) archived.add(versionKey(row.id, row.checksum));
  }

  // Decide per id (the per-org lock makes the probe current for the whole transaction).
  const actions = new Map<string, Action>();
  for (const [id, winner] of winners) {
    const current = stored.get(id) ?? null;
    let action: Action;
    if (!current) action = 'insert';
    else if (current.checksum === winner.record.checksum) {
      // Same content: only a delete not older than the stored version changes anything.
      action = isDeleted(winner.record) && isNewerVersion(winner.record, current) ? 'update' : 'same';
    } else action = isNewerVersion(winner.record, current) ? 'update' : 'stale';
    actions.set(id, action);
  }
  const applied = (id: string) => {
    const a = actions.get(id);
    return a === 'insert' || a === 'update';
  };
  const toApply = [...winners.values()].filter((w) => applied(w.record.id));
  // Every version that does not end up current goes to record_versions once: the batch's older or
  // stale versions here, the stored row being replaced below (straight from validic.records).
  const toArchive = distinct.filter(({ record: r }) => {
    if (r.checksum === stored.get(r.id)?.checksum) return false;
    if (applied(r.id) && winners.get(r.id)?.record.checksum === r.checksum) return false;
    return !archived.has(versionKey(r.id, r.checksum));
  });
  const updatedIds = [...actions].filter(([, a]) => a === 'update').map(([id]) => id);
  const insertedIds = [...actions].filter(([, a]) => a === 'insert').map(([id]) => id);
  // The stored rows an update replaces by another checksum; a delete of the same checksum keeps none.
  const replacedIds = updatedIds.filter(
    (id) => stored.get(id)?.checksum !== winners.get(id)?.record.checksum,
  );

  // Phase 2, fast path: only new ids (a first backfill, most stream frames): one statement.
  if (updatedIds.length === 0 && toArchive.length === 0) {
    await insertNewRecords(tx, org, batch.arrivedVia, toApply, also, encoded);
    countRecords(records, winners, actions, stored, result);
    return { sentAlso: true };
  }

  // Phase 2: full rows only for what is written.
  if (toApply.length + toArchive.length > 0) {
    const row = (n: NormalizedRecord, apply: boolean) => [...recordRowValues(n), apply];
    await stageRows(tx, STAGE.records, [
      ...toApply.map((r) => row(r, true)),
      ...toArchive.map((r) => row(r, false)),
    ]);
  }

  if (replacedIds.length > 0) {
    await sql`
      insert into validic.record_versions
        (org_id, record_id, checksum, type, created_at, deleted_at, raw, arrived_via, start_time)
      select cur.org_id, cur.id, cur.checksum, cur.type, cur.created_at, cur.deleted_at, cur.raw, cur.arrived_via,
             cur.start_time
      from validic.records cur
      where cur.org_id = ${org} and cur.id = any(${replacedIds}::text[])
        and not exists (select 1 from validic.record_versions v
                        where v.org_id = ${org} and v.record_id = cur.id and v.checksum = cur.checksum)
      on conflict do nothing`.execute(tx.db);
  }
  if (toArchive.length > 0) {
    await sql`
      insert into validic.record_versions
        (org_id, record_id, checksum, type, created_at, deleted_at, raw, arrived_via, start_time)
      select ${org}, s.id, s.checksum, s.type, s.created_at, s.deleted_at, s.raw, ${batch.arrivedVia}, s.start_time
      from validic_stage_records s
      where not s.apply
      on conflict do nothing`.execute(tx.db);
  }
  if (toApply.length > 0) {
    // Two statements rather than an upsert: a partitioned table has no unique index on (org_id, id)
    // alone (its month is part of every key), and the probe already told new ids from stored ones.
    // An update that changes start_time moves the row to its new month.
    await sql`
      update validic.records as r set ${sql.join(
        RECORD_COLUMNS.map((c) => sql`${sql.ref(c.name)} = s.${sql.ref(c.name)}`),
      )}, arrived_via = ${batch.arrivedVia}, raw_emptied_at = null, updated_at = now()
      from validic_stage_records s
      where s.apply and r.org_id = ${org} and r.id = s.id`.execute(tx.db);
    const names = sql.join(RECORD_COLUMNS.map((c) => sql.ref(c.name)));
    const values = sql.join(RECORD_COLUMNS.map((c) => sql`s.${sql.ref(c.name)}`));
    await sql`
      insert into validic.records (org_id, ${names}, arrived_via)
      select ${org}, ${values}, ${batch.arrivedVia}
      from validic_stage_records s
      where s.apply and s.id = any(${insertedIds}::text[])`.execute(tx.db);
  }

  countRecords(records, winners, actions, stored, result);
  return { sentAlso: false };
}

/**
 * Per item: the item that became current counts inserted/updated; an item equal to the final current
 * version counts unchanged (a duplicate); anything older counts stale.
 */
function countRecords(
  records: NormalizedRecord[],
  winners: Map<string, NormalizedRecord>,
  actions: Map<string, Action>,
  stored: Map<string, StoredVersion | null>,
  result: LoadResult,
) {
  const counted = new Set<string>();
  for (const { record } of records) {
    const action = actions.get(record.id);
    const winner = winners.get(record.id);
    if (!action || !winner) continue;
    const finalChecksum = action === 'stale' ? stored.get(record.id)?.checksum : winner.record.checksum;
    const applied = action === 'insert' || action === 'update';
    if (applied && record.checksum === winner.record.checksum && !counted.has(record.id)) {
      counted.add(record.id);
      bump(result, record.type, action === 'insert' ? 'inserted' : 'updated');
    } else if (record.checksum === finalChecksum) {
      bump(result, record.type, 'unchanged');
    } else {
      bump(result, record.type, 'stale');
    }
  }
}
