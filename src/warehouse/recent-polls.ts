/**
 * The recent poll's schedule per user (validic_sync.recent_polls): when a user's poll was last queued
 * (written by the records.recent tick before it enqueues) and last completed (by records.poll). It is
 * bookkeeping, not data: a crash between a poll's load and its mark only polls that user once more.
 */
import type { Kysely } from 'kysely';
import type { Database } from './database.ts';

export async function markRecentPollsEnqueued(
  db: Kysely<Database>,
  orgId: string,
  uids: readonly string[],
  at: Date,
): Promise<void> {
  if (uids.length === 0) return;
  await db
    .insertInto('validic_sync.recent_polls')
    .values(uids.map((uid) => ({ org_id: orgId, uid, enqueued_at: at })))
    .onConflict((oc) =>
      oc.columns(['org_id', 'uid']).doUpdateSet((eb) => ({ enqueued_at: eb.ref('excluded.enqueued_at') })),
    )
    .execute();
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
