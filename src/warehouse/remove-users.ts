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
 * Returns the uids newly marked.
 */
export async function markUnlistedUsersRemoved(
  db: Kysely<Database>,
  orgId: string,
  listed: readonly string[],
): Promise<string[]> {
  const rows = await sql<{ uid: string }>`
    update validic.users set removed_at = now()
    where org_id = ${orgId} and removed_at is null and not (uid = any(${[...listed]}::text[]))
    returning uid`.execute(db);
  return rows.rows.map((r) => r.uid).sort();
}
