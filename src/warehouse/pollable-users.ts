/**
 * Who may be polled: every user of the org the warehouse knows, except those found gone from the
 * platform (`removed_at`, see remove-users.ts). `pollableUser` is that rule as a condition, used by
 * `pollableUsers` here (backfill) and by `selectUsersToPoll` (the scheduled recent poll), so a change to
 * who is polled is made once.
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from './database.ts';

/** The condition on a `validic.users` row (by its alias in the query) that makes its user pollable. */
export const pollableUser = (alias: string): RawBuilder<boolean> =>
  sql<boolean>`${sql.ref(`${alias}.removed_at`)} is null`;

/** Uids to poll for `orgId`, in uid order; only those of `uids` when given. */
export async function pollableUsers(
  db: Kysely<Database>,
  orgId: string,
  uids?: readonly string[],
): Promise<string[]> {
  let query = db
    .selectFrom('validic.users')
    .select('uid')
    .where('org_id', '=', orgId)
    .where(pollableUser('validic.users'));
  if (uids) {
    if (uids.length === 0) return [];
    query = query.where('uid', 'in', [...uids]);
  }
  const rows = await query.orderBy('uid').execute();
  return rows.map((r) => r.uid);
}
