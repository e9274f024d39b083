/**
 * Users found gone from the platform get `validic.users.removed_at` (the time the worker found out; the
 * platform does not say when). Two kinds of evidence, both definite:
 * - absent from a complete users listing (every page read to the end in one run);
 * - 404 on the user itself (`GET /users/{uid}`), asked after a user-scoped endpoint answered 404.
 * A removed user is not polled any more (pollable-users.ts). A listing that shows the user again
 * clears `removed_at` (load-users.ts). Rows are never deleted: the user's records stay.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

/** Marks `uids` removed (those already removed keep their first `removed_at`). Returns the uids newly marked. */
export async function markUsersRemoved(
  db: Kysely<Database>,
  orgId: string,
  uids: readonly string[],
): Promise<string[]> {
  if (uids.length === 0) return [];
  const rows = await db
    .updateTable('validic.users')
    .set({ removed_at: sql`now()` })
    .where('org_id', '=', orgId)
    .where('uid', 'in', [...uids])
    .where('removed_at', 'is', null)
    .returning('uid')
    .execute();
  return rows.map((r) => r.uid).sort();
}

/**
 * After a complete listing: marks removed every stored user of `orgId` the listing did not show.
 * `maxShare` (0..1): when the listing would remove more than this share of the users not yet removed, it
 * removes nobody and says how many it withheld (a listing the server could not prove complete, and that
 * leaves out most users, is far likelier lost data than an org that lost most of its users at once).
 */
export async function markUnlistedUsersRemoved(
  db: Kysely<Database>,
  orgId: string,
  listed: readonly string[],
  options: { maxShare?: number } = {},
): Promise<{ removed: string[]; withheld: number }> {
  const maxShare = options.maxShare ?? 1;
  const rows = await sql<{ uid: string | null; unlisted: number }>`
    with known as (
      select uid, not (uid = any(${[...listed]}::text[])) as unlisted
      from validic.users where org_id = ${orgId} and removed_at is null
    ), counts as (
      select count(*) filter (where unlisted)::int as unlisted, count(*)::int as known from known
    ), marked as (
      update validic.users set removed_at = now()
      where org_id = ${orgId} and removed_at is null
        and uid in (select uid from known where unlisted)
        and (select unlisted from counts) <= ${maxShare}::float8 * (select known from counts)
      returning uid
    )
    select uid, (select unlisted from counts) as unlisted from marked
    union all select null, (select unlisted from counts)`.execute(db);
  const removed = rows.rows.flatMap((r) => (r.uid === null ? [] : [r.uid])).sort();
  const unlisted = rows.rows[0]?.unlisted ?? 0;
  return { removed, withheld: removed.length === 0 ? unlisted : 0 };
}
