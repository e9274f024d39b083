/**
 * The loads of the kinds other than v2 records: users, connection events and legacy records, each
 * staged and merged in the batch's transaction.
 */
import { sql } from 'kysely';
import type { ConnectionEventRow, LegacyRecordRow, UserRow } from '../../normalize/normalized-types.ts';
import { type Batch, bump, type LoadResult } from '../../pipeline/batch.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';
import {
  CONNECTION_EVENTS,
  columnList,
  columnsOf,
  LEGACY_RECORDS,
  STAGE,
  setList,
  stageRows,
  USERS,
  valueRow,
} from './record-rows.ts';

/** The load of one kind: its rows of the batch into the warehouse, in the batch's transaction, counted in `result`. */
type LoadKind<Row> = (
  tx: WarehouseTransaction,
  batch: Batch,
  rows: Row[],
  result: LoadResult,
) => Promise<void>;

/**
 * Users keyed (org_id, uid): inserted, or updated when a field differs and updated_at is not older.
 * Users come from the users listing only, so a user loaded is a user listed: one marked removed
 * (remove-users.ts) is un-removed, even when nothing else changed.
 */
export const loadUsers: LoadKind<UserRow> = async (tx, batch, users, result) => {
  if (users.length === 0) return;
  // Newest per uid (later updated_at; equal or unknown: the later item in the batch).
  const byUid = new Map<string, UserRow>();
  for (const u of users) {
    const known = byUid.get(u.uid);
    if (!known || (u.updatedAt ?? '') >= (known.updatedAt ?? '')) byUid.set(u.uid, u);
  }
  await stageRows(tx, STAGE.users, [...byUid.values()].map(USERS.values));
  const written = await sql<{ uid: string; inserted: boolean }>`
    insert into validic.users as u (org_id, ${columnList(USERS)})
    select ${batch.orgId}, ${columnsOf(USERS, 's')}
    from ${sql.table(STAGE.users.name)} s
    left join validic.users cur on cur.org_id = ${batch.orgId} and cur.uid = s.uid
    where cur.uid is null
       or cur.removed_at is not null
       or ((s.updated_at is null or cur.updated_at is null or s.updated_at >= cur.updated_at)
           and ${valueRow(USERS, 'cur')} is distinct from ${valueRow(USERS, 's')})
    on conflict (org_id, uid) do update set
      ${setList(USERS, 'excluded')}, synced_at = now(), removed_at = null
    returning u.uid, (u.xmax = 0) as inserted`.execute(tx.db);
  let inserted = 0;
  for (const row of written.rows) if (row.inserted) inserted += 1;
  bump(result, 'user', 'inserted', inserted);
  bump(result, 'user', 'updated', written.rows.length - inserted);
  bump(result, 'user', 'unchanged', users.length - written.rows.length);
};

/** Connection events keyed (org_id, id): immutable, so an id already stored is never written again. */
export const loadConnectionEvents: LoadKind<ConnectionEventRow> = async (tx, batch, events, result) => {
  if (events.length === 0) return;
  const byId = new Map<string, ConnectionEventRow>();
  for (const e of events) if (!byId.has(e.id)) byId.set(e.id, e);
  await stageRows(tx, STAGE.events, [...byId.values()].map(CONNECTION_EVENTS.values));
  // Events are immutable: an id already stored is never written again.
  const written = await sql<{ id: string }>`
    insert into validic.connection_events (org_id, ${columnList(CONNECTION_EVENTS)}, arrived_via)
    select ${batch.orgId}, ${columnsOf(CONNECTION_EVENTS, 's')}, ${batch.arrivedVia}
    from ${sql.table(STAGE.events.name)} s
    where not exists (select 1 from validic.connection_events e where e.org_id = ${batch.orgId} and e.id = s.id)
    on conflict (org_id, id) do nothing
    returning id`.execute(tx.db);
  bump(result, 'connection_event', 'inserted', written.rows.length);
  bump(result, 'connection_event', 'unchanged', events.length - written.rows.length);
};

/**
 * Legacy (v1) records keyed (org_id, object, _id): the later last_updated wins (tie: the greater
 * document). A row marked deleted (legacy-deletes.ts) comes back only with a strictly later
 * last_updated: a list read before the delete, loaded after it, must not revive it; an edit after it
 * proves the record exists. Every other version, the row a newer one replaces and a version that
 * arrives too late alike, is kept in legacy_record_versions (migration 0031): every distinct version
 * seen but the current one. One statement: the decision, the history and the upsert read the same
 * snapshot under the batch's locks.
 */
export const loadLegacy: LoadKind<LegacyRecordRow> = async (tx, batch, legacy, result) => {
  if (legacy.length === 0) return;
  // Newest per (object, _id): later last_updated (missing = oldest); tie: the greater raw text.
  const newest = new Map<string, LegacyRecordRow>();
  const distinct = new Map<string, LegacyRecordRow>();
  const rank = (r: LegacyRecordRow) => (r.lastUpdated ? Date.parse(r.lastUpdated) : Number.NEGATIVE_INFINITY);
  for (const r of legacy) {
    const key = `${r.object}\u0001${r.id}`;
    const known = newest.get(key);
    if (!known || rank(r) > rank(known) || (rank(r) === rank(known) && r.raw > known.raw)) newest.set(key, r);
    if (!distinct.has(`${key}\u0001${r.raw}`)) distinct.set(`${key}\u0001${r.raw}`, r);
  }
  // Every distinct version of the batch, the newest of each key marked.
  await stageRows(
    tx,
    STAGE.legacy,
    [...distinct.values()].map((r) => [
      ...LEGACY_RECORDS.values(r),
      newest.get(`${r.object}\u0001${r.id}`)!.raw === r.raw,
    ]),
  );
  const org = batch.orgId;
  const written = await sql<{ object: string; id: string; inserted: boolean }>`
    with decided as (
      select s.*, cur.id is not null as stored, cur.raw as cur_raw, cur.last_updated as cur_last_updated,
             cur.deleted_at as cur_deleted_at, cur.arrived_via as cur_arrived_via,
             cur.id is null
             or (cur.deleted_at is null and cur.raw is distinct from s.raw
                 and (coalesce(s.last_updated, '-infinity') > coalesce(cur.last_updated, '-infinity')
                      or (coalesce(s.last_updated, '-infinity') = coalesce(cur.last_updated, '-infinity')
                          and s.raw::text collate "C" > cur.raw::text collate "C")))
             or (cur.deleted_at is not null
                 and coalesce(s.last_updated, '-infinity') > coalesce(cur.last_updated, '-infinity')) as wins
      from ${sql.table(STAGE.legacy.name)} s
      left join validic.legacy_records cur on cur.org_id = ${org} and cur.object = s.object and cur.id = s.id
      where s.newest
    ),
    kept as (
      insert into validic.legacy_record_versions (org_id, object, id, last_updated, deleted_at, raw, arrived_via)
      -- The row a newer version replaces.
      select ${org}, d.object, d.id, d.cur_last_updated, d.cur_deleted_at, d.cur_raw, d.cur_arrived_via
      from decided d where d.wins and d.stored and d.cur_raw is distinct from d.raw
      union all
      -- The batch's versions that do not end up current: older ones, and one that lost to the stored row.
      select ${org}, s.object, s.id, s.last_updated, null, s.raw, ${batch.arrivedVia}
      from ${sql.table(STAGE.legacy.name)} s
      join decided d on d.object = s.object and d.id = s.id
      where s.raw is distinct from (case when d.wins then d.raw else d.cur_raw end)
      on conflict do nothing
    )
    insert into validic.legacy_records as l (org_id, ${columnList(LEGACY_RECORDS)}, arrived_via)
    select ${org}, ${columnsOf(LEGACY_RECORDS, 'd')}, ${batch.arrivedVia}
    from decided d
    where d.wins
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
};
