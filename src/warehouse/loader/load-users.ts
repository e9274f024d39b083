/**
 * Users keyed (org_id, uid): inserted, or updated when a field differs and updated_at is not older.
 * Users come from the users listing only, so a user loaded is a user listed: one marked removed
 * (remove-users.ts) is un-removed, even when nothing else changed.
 */
import { sql } from 'kysely';
import type { UserRow } from '../../normalize/normalized-types.ts';
import type { Batch, LoadResult } from '../../pipeline/batch.ts';
import { bump } from '../../pipeline/batch.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';
import { STAGE, stageRows } from './staging-tables.ts';
import { columnList, columnsOf, setList, USERS, valueRow } from './table-columns.ts';

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
}
