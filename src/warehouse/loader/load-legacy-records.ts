/**
 * Legacy (v1) records keyed (org_id, object, _id): the later last_updated wins. A row marked deleted
 * (mark-legacy-deleted.ts) comes back only with a strictly later last_updated: a list read before the
 * delete, loaded after it, must not revive it; an edit after it proves the record exists.
 */
import { sql } from 'kysely';
import type { LegacyRecordRow } from '../../normalize/normalized-types.ts';
import type { Batch, LoadResult } from '../../pipeline/batch.ts';
import { bump } from '../../pipeline/batch.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';
import { STAGE, stageRows } from './staging-tables.ts';
import { columnList, columnsOf, LEGACY_RECORDS, setList } from './table-columns.ts';

export async function loadLegacy(
  tx: WarehouseTransaction,
  batch: Batch,
  legacy: LegacyRecordRow[],
  result: LoadResult,
) {
  if (legacy.length === 0) return;
  // Newest per (object, _id): later last_updated (missing = oldest); tie: the greater raw text.
  const newest = new Map<string, LegacyRecordRow>();
  const rank = (r: LegacyRecordRow) => (r.lastUpdated ? Date.parse(r.lastUpdated) : Number.NEGATIVE_INFINITY);
  for (const r of legacy) {
    const key = `${r.object}\u0001${r.id}`;
    const known = newest.get(key);
    if (!known || rank(r) > rank(known) || (rank(r) === rank(known) && r.raw > known.raw)) newest.set(key, r);
  }
  await stageRows(tx, STAGE.legacy, [...newest.values()].map(LEGACY_RECORDS.values));
  const written = await sql<{ object: string; id: string; inserted: boolean }>`
    insert into validic.legacy_records as l (org_id, ${columnList(LEGACY_RECORDS)}, arrived_via)
    select ${batch.orgId}, ${columnsOf(LEGACY_RECORDS, 's')}, ${batch.arrivedVia}
    from ${sql.table(STAGE.legacy.name)} s
    left join validic.legacy_records cur on cur.org_id = ${batch.orgId} and cur.object = s.object and cur.id = s.id
    where cur.id is null
       or (cur.deleted_at is null and cur.raw is distinct from s.raw
           and (coalesce(s.last_updated, '-infinity') > coalesce(cur.last_updated, '-infinity')
                or (coalesce(s.last_updated, '-infinity') = coalesce(cur.last_updated, '-infinity')
                    and s.raw::text collate "C" > cur.raw::text collate "C")))
       or (cur.deleted_at is not null
           and coalesce(s.last_updated, '-infinity') > coalesce(cur.last_updated, '-infinity'))
    on conflict (org_id, object, id) do update set
      ${setList(LEGACY_RECORDS, 'excluded')}, arrived_via = excluded.arrived_via, updated_at = now(),
      deleted_at = null
    returning l.object, l.id, (l.xmax = 0) as inserted`.execute(tx.db);
  const writtenKeys = new Map(written.rows.map((w) => [`${w.object}\u0001${w.id}`, w.inserted]));
  const seen = new Set<string>();
  for (const r of legacy) {
    const key = `${r.object}\u0001${r.id}`;
    const type = `legacy:${r.object}`;
    const inserted = writtenKeys.get(key);
    if (inserted !== undefined && newest.get(key) === r && !seen.has(key)) {
      seen.add(key);
      bump(result, type, inserted ? 'inserted' : 'updated');
    } else {
      bump(result, type, 'unchanged');
    }
  }
}
