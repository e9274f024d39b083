/**
 * The users the scheduled and backfill polls fetch: every user of the org the warehouse knows, except
 * those found gone from the platform (`removed_at`, see remove-users.ts). The one place that selects
 * users for polling, so that a change to who is polled is made once.
 */
import type { Kysely } from 'kysely';
import type { Database } from './database.ts';

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
    .where('removed_at', 'is', null);
  if (uids) {
    if (uids.length === 0) return [];
    query = query.where('uid', 'in', [...uids]);
  }
  const rows = await query.orderBy('uid').execute();
  return rows.map((r) => r.uid);
}
