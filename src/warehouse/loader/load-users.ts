/**
 * Users keyed (org_id, uid): inserted, or updated when a field differs and updated_at is not older.
 * Users come from the users listing only, so a user loaded is a user listed: one marked removed
 * (remove-users.ts) is un-removed, even when nothing else changed.
 */
import { sql } from 'kysely';
import type { UserRow } from '../../normalize/normalized-types.ts';
import type { Batch, LoadResult } from '../../pipeline/batch.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';
import { bump } from './load-counts.ts';
import { STAGE, stageRows } from './staging-tables.ts';

export async function loadUsers(
  tx: WarehouseTransaction,
  batch: Batch,
  users: UserRow[],
  result: LoadResult,
) {
  if (users.length === 0) return;
  // Newest per uid (later updated_at; equal or unknown: the later item in the batch).
  const byUid = new Map<string, UserRow>();
  for (const u of users) {
    const known = byUid.get(u.uid);
    if (!known || (u.updatedAt ?? '') >= (known.updatedAt ?? '')) byUid.set(u.uid, u);
  }
  await stageRows(tx, STAGE.users, [...byUid.values()].map(userRowValues));
  const written = await sql<{ uid: string; inserted: boolean }>`
    insert into validic.users as u
      (org_id, uid, user_id, timezone, country_code, status, marketplace_url, created_at, updated_at, raw)
    select ${batch.orgId}, s.uid, s.user_id, s.timezone, s.country_code, s.status, s.marketplace_url,
           s.created_at, s.updated_at, s.raw
    from validic_stage_users s
    left join validic.users cur on cur.org_id = ${batch.orgId} and cur.uid = s.uid
    where cur.uid is null
       or cur.removed_at is not null
       or ((s.updated_at is null or cur.updated_at is null or s.updated_at >= cur.updated_at)
           and (cur.user_id, cur.timezone, cur.country_code, cur.status, cur.marketplace_url, cur.created_at,
                cur.updated_at, cur.raw)
               is distinct from
               (s.user_id, s.timezone, s.country_code, s.status, s.marketplace_url, s.created_at, s.updated_at, s.raw))
    on conflict (org_id, uid) do update set
      user_id = excluded.user_id, timezone = excluded.timezone, country_code = excluded.country_code,
      status = excluded.status, marketplace_url = excluded.marketplace_url, created_at = excluded.created_at,
      updated_at = excluded.updated_at, raw = excluded.raw, synced_at = now(), removed_at = null
    returning u.uid, (u.xmax = 0) as inserted`.execute(tx.db);
  let inserted = 0;
  for (const row of written.rows) if (row.inserted) inserted += 1;
  bump(result, 'user', 'inserted', inserted);
  bump(result, 'user', 'updated', written.rows.length - inserted);
  bump(result, 'user', 'unchanged', users.length - written.rows.length);
}

/** The values of one `validic.users` row after org_id, in the staging table's column order (also the COPY baseline's). */
export function userRowValues(u: UserRow): unknown[] {
  return [
    u.uid,
    u.userId,
    u.timezone,
    u.countryCode,
    u.status,
    u.marketplaceUrl,
    u.createdAt,
    u.updatedAt,
    u.raw,
  ];
}
