/**
 * Who may be polled and the recent poll's state of each user. Pollable: every user of the org the
 * warehouse knows, except those found gone from the platform (`removed_at`, see remove-users.ts).
 * `isPollable` is that rule as a condition, used by every read of pollable users (`listPollableUids` for
 * backfill, the aggregate counts and the keyset slices of the scheduled recent poll), so a change to who
 * is polled is made once. And the poll's bookkeeping in validic_sync.recent_polls.
 */

import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from './database.ts';

/** The condition on a `validic.users` row (by its alias in the query) that makes its user pollable. */
export const isPollable = (alias: string): RawBuilder<boolean> =>
  sql<boolean>`${sql.ref(`${alias}.removed_at`)} is null`;

/** Uids to poll for `orgId`, in uid order; only those of `uids` when given. */
export async function listPollableUids(
  db: Kysely<Database>,
  orgId: string,
  uids?: readonly string[],
): Promise<string[]> {
  let query = db
    .selectFrom('validic.users')
    .select('uid')
    .where('org_id', '=', orgId)
    .where(isPollable('validic.users'));
  if (uids) {
    if (uids.length === 0) return [];
    query = query.where('uid', 'in', [...uids]);
  }
  const rows = await query.orderBy('uid').execute();
  return rows.map((r) => r.uid);
}

/**
 * THE selection of users the scheduled recent poll may poll, with what the schedule needs of each:
 * whether the user is recently active and when their recent poll was last queued and completed.
 * Every scheduled poll selects its users here; who is pollable at all (removed users are not) is the
 * condition `isPollable` of recent-polls.ts, shared with the backfill's selection.
 *
 * Active: a record whose start_time is within the window (`activeSince`); `exists` on the
 * (uid, start_time) index stops at the first such record, so this stays cheap per tick.
 */
export interface UserPollState {
  uid: string;
  active: boolean;
  enqueuedAt: Date | null;
  polledAt: Date | null;
}

export async function readUserPollStates(
  db: Kysely<Database>,
  orgId: string,
  activeSince: Date,
): Promise<UserPollState[]> {
  const rows = await sql<{ uid: string; active: boolean; enqueued_at: Date | null; polled_at: Date | null }>`
    select u.uid,
      exists (
        select 1 from validic.records r
        where r.org_id = u.org_id and r.uid = u.uid and r.start_time >= ${activeSince}
      ) as active,
      p.enqueued_at, p.polled_at
    from validic.users u
    left join validic_sync.recent_polls p on p.org_id = u.org_id and p.uid = u.uid
    where u.org_id = ${orgId} and ${isPollable('u')}
    order by u.uid`.execute(db);
  const date = (d: Date | string | null) => (d == null ? null : new Date(d));
  return rows.rows.map((r) => ({
    uid: r.uid,
    active: r.active,
    enqueuedAt: date(r.enqueued_at),
    polledAt: date(r.polled_at),
  }));
}

/** `activeSince`'s condition on a `validic.users` row by its alias: a record within the window. */
const activeUser = (alias: string, activeSince: Date) => sql<boolean>`exists (
  select 1 from validic.records r
  where r.org_id = ${sql.ref(`${alias}.org_id`)} and r.uid = ${sql.ref(`${alias}.uid`)} and r.start_time >= ${activeSince}
)`;

const date = (d: Date | string | null) => (d == null ? null : new Date(d));

/** What the plan and `status` need of the population, by aggregate (no user row leaves the database). */
export interface PollableUserCounts {
  pollable: number;
  active: number;
  /** Active users whose recent poll never completed. */
  activeNeverPolled: number;
  /** The oldest completed recent poll of an active user (null: no active user was ever polled). */
  oldestActivePolledAt: Date | null;
}

export async function countPollableUsers(
  db: Kysely<Database>,
  orgId: string,
  activeSince: Date,
): Promise<PollableUserCounts> {
  const { rows } = await sql<{
    pollable: number;
    active: number;
    active_never_polled: number;
    oldest_active_polled_at: Date | string | null;
  }>`
    select
      (select count(*)::int from validic.users u where u.org_id = ${orgId} and ${isPollable('u')}) as pollable,
      count(*)::int as active,
      (count(*) - count(p.polled_at))::int as active_never_polled,
      min(p.polled_at) as oldest_active_polled_at
    from validic.users u
    left join validic_sync.recent_polls p on p.org_id = u.org_id and p.uid = u.uid
    where u.org_id = ${orgId} and ${isPollable('u')} and ${activeUser('u', activeSince)}`.execute(db);
  const r = rows[0]!;
  return {
    pollable: r.pollable,
    active: r.active,
    activeNeverPolled: r.active_never_polled,
    oldestActivePolledAt: date(r.oldest_active_polled_at),
  };
}

/**
 * The recent polls' figures the tick's gate needs (src/budget/read-budget-plan.ts, `RecentPollStats`, the same
 * definitions), of pollable users, each a range of an index of 0017 (polls queued or completed
 * recently), not of the population.
 */
export async function readRecentPollStats(
  db: Kysely<Database>,
  orgId: string,
  options: { now: number; windowMs: number; lostAfterMs: number; horizonMs: number },
): Promise<{
  slowestMs: number;
  inFlight: number;
  enqueuedInWindow: number;
  lastEnqueueAt: number | undefined;
}> {
  const at = (ms: number) => new Date(options.now - ms);
  const { rows } = await sql<{
    slowest_ms: number | null;
    in_flight: number;
    enqueued_in_window: number;
    last_enqueue_at: Date | string | null;
  }>`
    select
      (select (extract(epoch from max(p.polled_at - p.enqueued_at)) * 1000)::float8
        from validic_sync.recent_polls p join validic.users u on u.org_id = p.org_id and u.uid = p.uid
        where p.org_id = ${orgId} and p.polled_at > ${at(options.horizonMs)} and p.polled_at >= p.enqueued_at
          and ${isPollable('u')}) as slowest_ms,
      (select count(*)::int
        from validic_sync.recent_polls p join validic.users u on u.org_id = p.org_id and u.uid = p.uid
        where p.org_id = ${orgId} and p.enqueued_at > ${at(options.lostAfterMs)}
          and (p.polled_at is null or p.polled_at < p.enqueued_at) and ${isPollable('u')}) as in_flight,
      (select count(*)::int
        from validic_sync.recent_polls p join validic.users u on u.org_id = p.org_id and u.uid = p.uid
        where p.org_id = ${orgId} and p.enqueued_at > ${at(options.windowMs)} and ${isPollable('u')}) as enqueued_in_window,
      (select p.enqueued_at
        from validic_sync.recent_polls p join validic.users u on u.org_id = p.org_id and u.uid = p.uid
        where p.org_id = ${orgId} and p.enqueued_at is not null and ${isPollable('u')}
        order by p.enqueued_at desc limit 1) as last_enqueue_at`.execute(db);
  const r = rows[0]!;
  return {
    slowestMs: Math.max(0, Math.round(r.slowest_ms ?? 0)),
    inFlight: r.in_flight,
    enqueuedInWindow: r.enqueued_in_window,
    lastEnqueueAt: r.last_enqueue_at == null ? undefined : new Date(r.last_enqueue_at).getTime(),
  };
}

/**
 * The next due users of one kind (active or dormant), oldest poll first (never completed first, then
 * by polled_at), then uid, at most `limit`: the candidates of one tick. Users whose poll is in flight
 * (queued after their last completion, less than `lostBefore` ago) are not due; `polledBefore` null:
 * only never-polled users are due.
 *
 * Active users are read from the activity side (the uids with a record in the window, the same set
 * countPollableUsers counts), so the read is proportional to the active users, not to the dormant ones
 * whose polls are older. Dormant users by two keyset reads that stop at the limit: the never-polled in
 * uid order (users_pollable_idx), then the polled in poll order (recent_polls_polled_idx), where the
 * active users, polled most recently, come last.
 */
export async function readDueUsers(
  db: Kysely<Database>,
  orgId: string,
  options: { activeSince: Date; active: boolean; polledBefore: Date | null; lostBefore: Date; limit: number },
): Promise<UserPollState[]> {
  if (options.limit <= 0) return [];
  type Row = { uid: string; enqueued_at: Date | string | null; polled_at: Date | string | null };
  const { lostBefore, polledBefore, limit } = options;
  const neverPolled = sql<boolean>`(p.polled_at is null and (p.enqueued_at is null or p.enqueued_at <= ${lostBefore}))`;
  const polledDue = polledBefore
    ? sql<boolean>`(p.polled_at <= ${polledBefore}
        and not coalesce(p.enqueued_at > p.polled_at and p.enqueued_at > ${lostBefore}, false))`
    : sql<boolean>`false`;
  let rows: Row[];
  if (options.active) {
    const due = await sql<Row>`
      with active as materialized (
        select distinct r.uid from validic.records r
        where r.org_id = ${orgId} and r.start_time >= ${options.activeSince}
      )
      select u.uid, p.enqueued_at, p.polled_at
      from active a
      join validic.users u on u.org_id = ${orgId} and u.uid = a.uid
      left join validic_sync.recent_polls p on p.org_id = u.org_id and p.uid = u.uid
      where ${isPollable('u')} and (${neverPolled} or ${polledDue})
      order by p.polled_at nulls first, u.uid collate "C" limit ${limit}`.execute(db);
    rows = due.rows;
  } else {
    const dormant = sql<boolean>`not ${activeUser('u', options.activeSince)}`;
    const never = await sql<Row>`
      select u.uid, p.enqueued_at, p.polled_at
      from validic.users u
      left join validic_sync.recent_polls p on p.org_id = u.org_id and p.uid = u.uid
      where u.org_id = ${orgId} and ${isPollable('u')} and ${neverPolled} and ${dormant}
      order by u.uid collate "C" limit ${limit}`.execute(db);
    rows = [...never.rows];
    if (polledBefore && rows.length < limit) {
      const polled = await sql<Row>`
        select p.uid, p.enqueued_at, p.polled_at
        from validic_sync.recent_polls p
        join validic.users u on u.org_id = p.org_id and u.uid = p.uid
        where p.org_id = ${orgId} and ${polledDue} and ${isPollable('u')} and ${dormant}
        order by p.polled_at, p.uid collate "C" limit ${limit - rows.length}`.execute(db);
      rows.push(...polled.rows);
    }
  }
  return rows.map((r) => ({
    uid: r.uid,
    active: options.active,
    enqueuedAt: date(r.enqueued_at),
    polledAt: date(r.polled_at),
  }));
}

/**
 * The recent poll's schedule per user (validic_sync.recent_polls): when a user's poll was last queued
 * (written by the records.recent tick before it enqueues) and last completed (by records.poll). It is
 * bookkeeping, not data: a crash between a poll's load and its mark only polls that user once more.
 */
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

/** The org's pollable users (what push's cap is sized by), one count by `users_pollable_idx`. */
export async function countPollable(db: Kysely<Database>, orgId: string): Promise<number> {
  const users = await sql<{ n: number }>`
    select count(*)::int as n from validic.users u where u.org_id = ${orgId} and ${isPollable('u')}`.execute(
    db,
  );
  return users.rows[0]?.n ?? 0;
}
