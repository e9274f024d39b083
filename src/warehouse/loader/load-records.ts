/**
 * v2 records of every type, keyed (org_id, id): the I/O around decideVersions (decide-versions.ts,
 * which holds the dedupe rules). A record's nested parts (metrics, segments, series) live on its own
 * row, so they change with it.
 *
 * Phase 1 probes the stored versions with one keys-only query (a redelivered batch costs no more);
 * decideVersions decides; phase 2 COPYs only the rows to write into temp tables and applies them
 * set-based.
 */
import { type RawBuilder, sql } from 'kysely';
import type { NormalizedRecord, RecordRow } from '../../normalize/normalized-types.ts';
import type { Batch, LoadResult } from '../../pipeline/batch.ts';
import { bump } from '../../pipeline/batch.ts';
import type { EncodedCopyRow } from '../copy-text-format.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';
import { decideVersions, type StoredVersion, versionKey } from './decide-versions.ts';
import { insertNewRecords } from './insert-new-records.ts';
import { sqlLiteral } from './load-transaction.ts';
import { columnList, columnsOf, RECORDS, STAGE, setList, stageRows } from './record-rows.ts';

interface ProbeRow {
  id: string;
  checksum: string;
  /** The batch version's created_at and deletedness, as sent in the probe. */
  created_at: string;
  deleted: boolean;
  cur_checksum: string | null;
  cur_created_at: Date | string | null;
  cur_deleted: boolean | null;
  archived: boolean;
}

/**
 * The keys-only probe of `records` as one statement with literals only (no parameters), so that it
 * can ride in the transaction's first round trip, right after the locks (loadTransaction).
 * Null when there is nothing to probe. Every id is looked up in each month's partition (an id alone does
 * not say its month); record_versions only for ids that are stored, since a version is archived only
 * beside a current row (a new id, the stream's usual case, then costs no version lookups at all).
 * The lookup is a LATERAL with LIMIT 1, so it stays an index probe per id whatever the statistics say
 * (a join left to the planner became a merge join sorting the org's every record when the partitions
 * had no statistics yet: quadratic loads, found by the query-scaling bench).
 */
export function probeStatement(org: string, records: readonly NormalizedRecord[]): string | null {
  const versions = new Map<string, RecordRow>();
  for (const { record: r } of records) versions.set(versionKey(r.id, r), r);
  if (versions.size === 0) return null;
  const list = [...versions.values()];
  const array = (values: string[], type: string) => `array[${values.map(sqlLiteral).join(',')}]::${type}[]`;
  const o = sqlLiteral(org);
  return `select k.id, k.checksum, k.created_at, k.deleted, cur.checksum as cur_checksum,
       cur.created_at as cur_created_at, cur.deleted_at is not null as cur_deleted,
       cur.id is not null and exists (select 1 from validic.record_versions v
               where v.org_id = ${o} and v.record_id = k.id and v.checksum = k.checksum
                 and v.created_at = k.created_at::timestamptz and (v.deleted_at is not null) = k.deleted) as archived
from unnest(${array(
    list.map((r) => r.id),
    'text',
  )}, ${array(
    list.map((r) => r.checksum),
    'text',
  )}, ${array(
    list.map((r) => r.createdAt),
    'text',
  )}, ${array(
    list.map((r) => String(r.deletedAt !== null)),
    'boolean',
  )}) as k(id, checksum, created_at, deleted)
left join lateral (select r.id, r.checksum, r.created_at, r.deleted_at from validic.records r
                   where r.org_id = ${o} and r.id = k.id limit 1) cur on true`;
}

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
    if (row.archived)
      archived.add(
        versionKey(row.id, {
          checksum: row.checksum,
          createdAt: row.created_at,
          deletedAt: row.deleted ? 'deleted' : null,
        }),
      );
  }

  const decision = decideVersions(
    records.map((n) => n.record),
    stored,
    archived,
    { platformCurrent: batch.arrivedVia === 'audit' },
  );
  const normalized = new Map(records.map((n) => [n.record, n]));
  const toApply = decision.toApply.map((r) => normalized.get(r)!);
  const toArchive = decision.toArchive.map((r) => normalized.get(r)!);
  const { updatedIds, insertedIds, replacedIds, toUnarchive } = decision;
  const count = () => {
    for (let i = 0; i < records.length; i += 1) bump(result, records[i]!.record.type, decision.counts[i]!);
  };

  // Phase 2, fast path: only new ids (a first backfill, most stream frames): one statement.
  if (updatedIds.length === 0 && toArchive.length === 0) {
    await insertNewRecords(tx, org, batch.arrivedVia, toApply, also, encoded);
    count();
    return { sentAlso: true };
  }

  // Phase 2: full rows only for what is written.
  if (toApply.length + toArchive.length > 0) {
    const row = (n: NormalizedRecord, apply: boolean) => [...RECORDS.values(n), apply];
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
                        where v.org_id = ${org} and v.record_id = cur.id and v.checksum = cur.checksum
                          and v.created_at = cur.created_at and (v.deleted_at is null) = (cur.deleted_at is null))
      on conflict do nothing`.execute(tx.db);
  }
  if (toArchive.length > 0) {
    await sql`
      insert into validic.record_versions
        (org_id, record_id, checksum, type, created_at, deleted_at, raw, arrived_via, start_time)
      select ${org}, s.id, s.checksum, s.type, s.created_at, s.deleted_at, s.raw, ${batch.arrivedVia}, s.start_time
      from ${sql.table(STAGE.records.name)} s
      where not s.apply
      on conflict do nothing`.execute(tx.db);
  }
  if (toUnarchive.length > 0) {
    await sql`
      delete from validic.record_versions v
      using unnest(${toUnarchive.map((r) => r.id)}::text[], ${toUnarchive.map((r) => r.checksum)}::text[],
                   ${toUnarchive.map((r) => r.createdAt)}::timestamptz[],
                   ${toUnarchive.map((r) => r.deletedAt !== null)}::boolean[]) as u(id, checksum, created_at, deleted)
      where v.org_id = ${org} and v.record_id = u.id and v.checksum = u.checksum and v.created_at = u.created_at
        and (v.deleted_at is not null) = u.deleted`.execute(tx.db);
  }
  if (toApply.length > 0) {
    // Two statements rather than an upsert: a partitioned table has no unique index on (org_id, id)
    // alone (its month is part of every key), and the probe already told new ids from stored ones.
    // An update that changes start_time moves the row to its new month.
    await sql`
      update validic.records as r set ${setList(RECORDS, 's')}, arrived_via = ${batch.arrivedVia},
        raw_emptied_at = null, updated_at = now()
      from ${sql.table(STAGE.records.name)} s
      where s.apply and r.org_id = ${org} and r.id = s.id`.execute(tx.db);
    await sql`
      insert into validic.records (org_id, ${columnList(RECORDS)}, arrived_via)
      select ${org}, ${columnsOf(RECORDS, 's')}, ${batch.arrivedVia}
      from ${sql.table(STAGE.records.name)} s
      where s.apply and s.id = any(${insertedIds}::text[])`.execute(tx.db);
  }

  count();
  return { sentAlso: false };
}
