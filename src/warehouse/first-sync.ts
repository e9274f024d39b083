/**
 * The first sync of an organization's primary stream, in the warehouse (migration 0021): its row in
 * validic_sync.first_syncs (the days it covers, where the tick goes on, when it completed) and the
 * windows of each user it polled (validic_sync.first_sync_polls). src/budget/first-sync.ts says why.
 */
import { type Kysely, type RawBuilder, type Selectable, sql } from 'kysely';
import type { DateWindow } from '../validic/platform-limits.ts';
import type { Database, FirstSyncsTable } from './database.ts';
import { isPollable } from './recent-polls.ts';

export interface FirstSync {
  orgId: string;
  streamName: string;
  startedAt: Date;
  /** First and last day covered (UTC, YYYY-MM-DD); null for a first sync completed before they were tracked. */
  from: string | null;
  to: string | null;
  /** Where the next tick goes on, in uid byte order (null: from the first). */
  nextUid: string | null;
  completedAt: Date | null;
  usersCovered: number | null;
}

const date = (d: Date | string | null) => (d == null ? null : new Date(d));
const day = (d: Date | string | null) =>
  d == null ? null : typeof d === 'string' ? d.slice(0, 10) : d.toISOString().slice(0, 10);

function toFirstSync(r: Selectable<FirstSyncsTable>): FirstSync {
  return {
    orgId: r.org_id,
    streamName: r.stream_name,
    startedAt: date(r.started_at)!,
    from: day(r.from_date),
    to: day(r.to_date),
    nextUid: r.next_uid,
    completedAt: date(r.completed_at),
    usersCovered: r.users_covered,
  };
}

export async function readFirstSync(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
): Promise<FirstSync | undefined> {
  const row = await db
    .selectFrom('validic_sync.first_syncs')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('stream_name', '=', streamName)
    .executeTakeFirst();
  return row ? toFirstSync(row) : undefined;
}

/** Starts the first sync of `streamName` over `from`..`to`, or returns the one started before (idempotent). */
export async function beginFirstSync(
  db: Kysely<Database>,
  input: { orgId: string; streamName: string; from: string; to: string; at: Date },
): Promise<FirstSync> {
  await db
    .insertInto('validic_sync.first_syncs')
    .values({
      org_id: input.orgId,
      stream_name: input.streamName,
      started_at: input.at,
      from_date: input.from,
      to_date: input.to,
    })
    .onConflict((oc) => oc.columns(['org_id', 'stream_name']).doNothing())
    .execute();
  return (await readFirstSync(db, input.orgId, input.streamName))!;
}

/** A user's window polled for the first sync (written by records.poll once every resource was fetched). */
export async function markFirstSyncPolled(
  db: Kysely<Database>,
  input: { orgId: string; streamName: string; uid: string; startDate: string; endDate: string; at: Date },
): Promise<void> {
  await db
    .insertInto('validic_sync.first_sync_polls')
    .values({
      org_id: input.orgId,
      stream_name: input.streamName,
      uid: input.uid,
      start_date: input.startDate,
      end_date: input.endDate,
      polled_at: input.at,
    })
    .onConflict((oc) =>
      oc
        .columns(['org_id', 'stream_name', 'uid', 'start_date', 'end_date'])
        .doUpdateSet({ polled_at: input.at }),
    )
    .execute();
}

/** The condition on a `validic.users` row (by alias) that some window of `windows` is not yet polled for it. */
function uncovered(alias: string, streamName: string, windows: readonly DateWindow[]): RawBuilder<boolean> {
  const pairs = sql.join(windows.map((w) => sql`(${w.startDate}::date, ${w.endDate}::date)`));
  return sql<boolean>`(
    select count(*) from validic_sync.first_sync_polls c
    where c.org_id = ${sql.ref(`${alias}.org_id`)} and c.stream_name = ${streamName}
      and c.uid = ${sql.ref(`${alias}.uid`)} and (c.start_date, c.end_date) in (${pairs})
  ) < ${windows.length}`;
}

/**
 * The next users the first sync has not covered, after `afterUid` in uid byte order (users_pollable_idx),
 * at most `limit`: pollable, some window not yet polled for it, and no recent poll in flight (queued after
 * its last completion, less than `lostBefore` ago), as the recent poll counts one (recent-polls.ts).
 */
export async function readFirstSyncDue(
  db: Kysely<Database>,
  input: {
    orgId: string;
    streamName: string;
    windows: readonly DateWindow[];
    afterUid: string | null;
    lostBefore: Date;
    limit: number;
  },
): Promise<string[]> {
  if (input.limit <= 0 || input.windows.length === 0) return [];
  const after = input.afterUid === null ? sql`true` : sql`u.uid collate "C" > ${input.afterUid}`;
  const { rows } = await sql<{ uid: string }>`
    select u.uid from validic.users u
    left join validic_sync.recent_polls p on p.org_id = u.org_id and p.uid = u.uid
    where u.org_id = ${input.orgId} and ${isPollable('u')} and ${after}
      and not coalesce(p.enqueued_at > ${input.lostBefore} and (p.polled_at is null or p.polled_at < p.enqueued_at), false)
      and ${uncovered('u', input.streamName, input.windows)}
    order by u.uid collate "C" limit ${input.limit}`.execute(db);
  return rows.map((r) => r.uid);
}

/** Moves the first sync's keyset on (`nextUid` null: the next tick starts again from the first user). */
export async function moveFirstSyncOn(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
  nextUid: string | null,
): Promise<void> {
  await db
    .updateTable('validic_sync.first_syncs')
    .set({ next_uid: nextUid })
    .where('org_id', '=', orgId)
    .where('stream_name', '=', streamName)
    .execute();
}

/** The pollable users, and how many of them some window of `windows` is not yet polled for. */
export async function countFirstSyncUsers(
  db: Kysely<Database>,
  orgId: string,
  streamName: string,
  windows: readonly DateWindow[],
): Promise<{ pollable: number; pending: number }> {
  const { rows } = await sql<{ pollable: number; pending: number }>`
    select count(*)::int as pollable,
      (count(*) filter (where ${uncovered('u', streamName, windows)}))::int as pending
    from validic.users u where u.org_id = ${orgId} and ${isPollable('u')}`.execute(db);
  return rows[0] ?? { pollable: 0, pending: 0 };
}

/** Marks the first sync complete (once; a second call changes nothing). Returns whether it did. */
export async function completeFirstSync(
  db: Kysely<Database>,
  input: { orgId: string; streamName: string; at: Date; usersCovered: number },
): Promise<boolean> {
  const result = await db
    .updateTable('validic_sync.first_syncs')
    .set({ completed_at: input.at, users_covered: input.usersCovered, next_uid: null })
    .where('org_id', '=', input.orgId)
    .where('stream_name', '=', input.streamName)
    .where('completed_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
