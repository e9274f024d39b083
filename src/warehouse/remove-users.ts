/**
 * Users found gone from the platform get `validic.users.removed_at` (the time the worker found out; the
 * platform does not say when). Two kinds of evidence, both definite:
 * - absent from a complete users listing (every page read to the end in one run);
 * - 404 on the user itself (`GET /users/{uid}`), asked after a user-scoped endpoint answered 404.
 * A removed user is not polled any more (recent-polls.ts). A listing that shows the user again
 * clears `removed_at` (load-kinds.ts). Rows are never deleted: the user's records stay.
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
 * The uids one page of a running listing showed (`listingId`: one run of users.sync), before the page is
 * loaded: those the warehouse does not hold yet are marked first listed.
 */
export async function recordListedUsers(
  db: Kysely<Database>,
  orgId: string,
  listingId: string,
  uids: readonly string[],
): Promise<void> {
  if (uids.length === 0) return;
  await sql`
    insert into validic_sync.users_listings (org_id, listing_id, uid, first_listed)
    select ${orgId}, ${listingId}, l.uid,
      not exists (select 1 from validic.users u where u.org_id = ${orgId} and u.uid = l.uid)
    from unnest(${[...new Set(uids)]}::text[]) as l(uid)
    on conflict do nothing`.execute(db);
}

/** The uids a listing showed that the warehouse did not hold before it (pollable ones, uid order). */
export async function firstListedUsers(
  db: Kysely<Database>,
  orgId: string,
  listingId: string,
): Promise<string[]> {
  const { rows } = await sql<{ uid: string }>`
    select l.uid from validic_sync.users_listings l
    join validic.users u on u.org_id = l.org_id and u.uid = l.uid and u.removed_at is null
    where l.org_id = ${orgId} and l.listing_id = ${listingId} and l.first_listed
    order by l.uid collate "C"`.execute(db);
  return rows.map((r) => r.uid);
}

/** Forgets a listing's uids, and those of listings older than a day (a process that died mid-listing). */
export async function forgetListing(db: Kysely<Database>, orgId: string, listingId: string): Promise<void> {
  await sql`
    delete from validic_sync.users_listings
    where (org_id = ${orgId} and listing_id = ${listingId}) or listed_at < now() - interval '1 day'`.execute(
    db,
  );
}

/** At most this many removed uids are returned (and logged); the count is always whole. */
export const REMOVED_UIDS_SHOWN = 100;

/**
 * After a complete listing (`listingId`, whose pages recordListedUsers kept): marks removed every stored
 * user of `orgId` the listing did not show, by one anti-join, whatever the population.
 * `maxShare` (0..1): when the listing would remove more than this share of the users not yet removed, it
 * removes nobody and says how many it withheld (a listing the server could not prove complete, and that
 * leaves out most users, is far likelier lost data than an org that lost most of its users at once).
 * Returns the first REMOVED_UIDS_SHOWN uids marked (sorted) and how many were.
 */
export async function markUnlistedUsersRemoved(
  db: Kysely<Database>,
  orgId: string,
  listingId: string,
  options: { maxShare?: number } = {},
): Promise<{ removed: string[]; removedCount: number; withheld: number }> {
  const maxShare = options.maxShare ?? 1;
  const rows = await sql<{ uid: string | null; unlisted: number; marked: number }>`
    with known as (
      select u.uid, not exists (
        select 1 from validic_sync.users_listings l
        where l.org_id = u.org_id and l.listing_id = ${listingId} and l.uid = u.uid
      ) as unlisted
      from validic.users u where u.org_id = ${orgId} and u.removed_at is null
    ), counts as (
      select count(*) filter (where unlisted)::int as unlisted, count(*)::int as known from known
    ), marked as (
      update validic.users set removed_at = now()
      where org_id = ${orgId} and removed_at is null
        and uid in (select uid from known where unlisted)
        and (select unlisted from counts) <= ${maxShare}::float8 * (select known from counts)
      returning uid
    ), shown as (
      select uid from marked order by uid collate "C" limit ${REMOVED_UIDS_SHOWN}
    )
    select uid, (select unlisted from counts) as unlisted, (select count(*)::int from marked) as marked from shown
    union all select null, (select unlisted from counts), (select count(*)::int from marked)`.execute(db);
  const removed = rows.rows.flatMap((r) => (r.uid === null ? [] : [r.uid]));
  const removedCount = rows.rows[0]?.marked ?? 0;
  const unlisted = rows.rows[0]?.unlisted ?? 0;
  return { removed, removedCount, withheld: removedCount === 0 ? unlisted : 0 };
}
