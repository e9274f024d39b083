/**
 * The first sync: before stream-first planning turns the recent poll off, every user is polled over the
 * lookback once, by a poll queued after the org's primary stream was first heard. Its days, and what
 * `status` says of it.
 *
 * Why. A new stream delivers what is created from its backlog's start on, and the provider does not say
 * where that is: at the stream's creation (our sandbox), or at midnight (UTC) of its start date. Either
 * way, what was created before is the stream's blind spot, and reaches the warehouse only by REST. The
 * recent poll's first sweep used to stop as soon as the stream was heard, leaving the users it had not
 * reached yet without their records of the days before.
 *
 * Covered. A user is covered once a records.poll of every window of the first sync's days has completed
 * (every resource fetched), queued by a records.recent tick that had read the stream's cursor. The
 * days: the lookback (`sync.lookbackDays`) before the UTC day the stream was first heard, with the edge
 * days (platform-limits.ts, planRecordWindows): a record created before the stream began started before
 * it was heard. Older records are history, which `backfill` brings (and `sync.newUserHistoryDays` for
 * users the listing adds later).
 *
 * The bound is the stream being heard, not its first event. The cursor that says it was heard was
 * written after a frame of the stream arrived: the stream existed, and its backlog had begun under either
 * reading, before the tick queued the poll; the poll's requests reach the platform later still, and see
 * everything created before the backlog began. That needs no reading of the platform's clock (the
 * worker's is not the platform's), assumes nothing of the order the stream delivers in (its first event
 * need not be its oldest, and a midnight backlog's first event predates the stream), and holds for a
 * stream found with a cursor of its own from an earlier deployment. Its price: polls queued between
 * the stream's creation and its being heard (a tick or two at start) count for nothing and are redone.
 *
 * Complete. Every pollable user covered, once a users listing has been read to its end (users the first
 * complete listing stores are the population; the ones later listings add get `sync.newUserHistoryDays`
 * of history instead). Recorded in validic_sync.first_syncs, with each user's windows in
 * validic_sync.first_sync_polls, so a restart resumes it.
 */
import type { Kysely } from 'kysely';
import { type DateWindow, formatUtcDate, planRecordWindows } from '../validic/platform-limits.ts';
import { readCursor, usersFullSyncCursor } from '../warehouse/cursors.ts';
import type { Database } from '../warehouse/database.ts';
import { countFirstSyncUsers, type FirstSync } from '../warehouse/first-sync.ts';
import type { OrgBudget } from './read-budget-plan.ts';

const DAY_MS = 86_400_000;

/** The first sync's days when it begins at `nowMs`: the lookback before today, and today. */
export function firstSyncRange(lookbackDays: number, nowMs: number): { from: string; to: string } {
  const today = Math.floor(nowMs / DAY_MS);
  return { from: formatUtcDate(today - lookbackDays), to: formatUtcDate(today) };
}

/** The windows each user is polled over (with the edge days), one records.poll each. */
export function firstSyncWindows(sync: Pick<FirstSync, 'from' | 'to'>): DateWindow[] {
  if (sync.from === null || sync.to === null) return [];
  return planRecordWindows(sync.from, sync.to);
}

/** What `status` shows of an org's first sync. */
export interface FirstSyncStatus {
  streamName: string;
  /**
   * `off`: the recent poll is not scheduled, so no first sync runs; `waiting`: not begun (it begins at
   * the first records.recent tick after the stream is heard; meanwhile the recent poll covers the lookback
   * as a fallback); `running`: users are being covered; `complete`: every user was.
   */
  state: 'off' | 'waiting' | 'running' | 'complete';
  /** The state in words, with what it waits for. */
  reason: string;
  /** When the worker first heard the stream and began, and when every user had been covered (ISO). */
  startedAt: string | null;
  completedAt: string | null;
  /** The days covered (UTC); null for a first sync completed before they were tracked (migration 0021). */
  from: string | null;
  to: string | null;
  /** Pollable users, and how many are not covered yet (running); at completion, the users covered. */
  users: number | null;
  pending: number | null;
}

/**
 * The first sync as `status` shows it: its row, and while it runs how many users it has left.
 * `budget` is the org's plan as of now (readBudgetPlan).
 */
export async function readFirstSyncStatus(
  db: Kysely<Database>,
  orgId: string,
  budget: Pick<OrgBudget, 'streamName' | 'firstSync' | 'recentPoll'>,
): Promise<FirstSyncStatus> {
  const { streamName, firstSync: sync } = budget;
  const base = {
    streamName,
    startedAt: sync?.startedAt.toISOString() ?? null,
    completedAt: sync?.completedAt?.toISOString() ?? null,
    from: sync?.from ?? null,
    to: sync?.to ?? null,
  };
  if (sync?.completedAt)
    return {
      ...base,
      state: 'complete',
      reason: 'every user was polled over its days since the stream was first heard',
      users: sync.usersCovered,
      pending: 0,
    };
  if (budget.recentPoll.mode === 'off')
    return { ...base, state: 'off', reason: budget.recentPoll.reason, users: null, pending: null };
  if (!sync)
    return {
      ...base,
      state: 'waiting',
      reason:
        budget.recentPoll.streamLastHeardAt === null
          ? 'the stream has not been heard yet (meanwhile the recent poll covers the lookback)'
          : 'the stream is heard: the next records.recent tick begins it',
      users: null,
      pending: null,
    };
  const counts = await countFirstSyncUsers(db, orgId, streamName, firstSyncWindows(sync));
  const listed = (await readCursor(db, orgId, usersFullSyncCursor())) !== undefined;
  return {
    ...base,
    state: 'running',
    reason:
      counts.pending > 0
        ? `${counts.pending} of ${counts.pollable} users left to poll`
        : listed
          ? 'every user polled: the next records.recent tick that passes the last user completes it'
          : 'every user stored is polled; waiting for a users listing read to its end (users.sync)',
    users: counts.pollable,
    pending: counts.pending,
  };
}
