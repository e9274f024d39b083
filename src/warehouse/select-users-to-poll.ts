/**
 * THE selection of users the scheduled recent poll may poll, with what the schedule needs of each:
 * whether the user is recently active and when their recent poll was last queued and completed.
 * Every scheduled poll selects its users here; who is pollable at all (removed users are not) is the
 * condition `pollableUser` of pollable-users.ts, shared with the backfill's selection.
 *
 * Active: a record whose start_time is within the window (`activeSince`); `exists` on the
 * (uid, start_time) index stops at the first such record, so this stays cheap per tick.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';
import { pollableUser } from './pollable-users.ts';

export interface PollableUser {
  uid: string;
  active: boolean;
  enqueuedAt: Date | null;
  polledAt: Date | null;
}

export async function selectUsersToPoll(
  db: Kysely<Database>,
  orgId: string,
  activeSince: Date,
): Promise<PollableUser[]> {
  const rows = await sql<{ uid: string; active: boolean; enqueued_at: Date | null; polled_at: Date | null }>`
    select u.uid,
      exists (
        select 1 from validic.records r
        where r.org_id = u.org_id and r.uid = u.uid and r.start_time >= ${activeSince}
      ) as active,
      p.enqueued_at, p.polled_at
    from validic.users u
    left join validic_sync.recent_polls p on p.org_id = u.org_id and p.uid = u.uid
    where u.org_id = ${orgId} and ${pollableUser('u')}
    order by u.uid`.execute(db);
  const date = (d: Date | string | null) => (d == null ? null : new Date(d));
  return rows.rows.map((r) => ({
    uid: r.uid,
    active: r.active,
    enqueuedAt: date(r.enqueued_at),
    polledAt: date(r.polled_at),
  }));
}
