/**
 * The recent poll's schedule per user (validic_sync.recent_polls): when a user's poll was last queued
 * (written by the records.recent tick before it enqueues) and last completed (by records.poll). It is
 * bookkeeping, not data: a crash between a poll's load and its mark only polls that user once more.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

export async function markRecentPollsEnqueued(
  db: Kysely<Database>,
  orgId: string,
  uids: readonly string[],
  at: Date,
): Promise<void> {
  if (uids.length === 0) return;
  await sql`
    insert into validic_sync.recent_polls (org_id, uid, enqueued_at)
    select ${orgId}, uid, ${at} from unnest(${sql.val([...uids])}::text[]) as uid
    on conflict (org_id, uid) do update set enqueued_at = excluded.enqueued_at`.execute(db);
}

export async function markRecentPollDone(
  db: Kysely<Database>,
  orgId: string,
  uid: string,
  at: Date,
): Promise<void> {
  await db
    .insertInto('validic_sync.recent_polls')
    .values({ org_id: orgId, uid, polled_at: at })
    .onConflict((oc) => oc.columns(['org_id', 'uid']).doUpdateSet({ polled_at: at }))
    .execute();
}
