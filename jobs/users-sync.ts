/**
 * users.sync: reads every user of the organization (page-index pager, 1,000 per page) and loads each
 * page as one batch. The cursor records when the list was last read completely.
 *
 * A complete listing (every page read to the end in this run) is also the evidence that a user is gone:
 * stored users it does not show get `removed_at` and are no longer polled (remove-users.ts); a user it
 * shows again is un-removed by the loader. An empty listing removes nobody (an org whose every user is
 * gone is far less likely than an answer that lost its data). A page-index pager can skip a user when
 * another user is deleted while it reads; such a user is un-removed by the next listing.
 */
import type { LoadCounts } from '../src/pipeline/batch.ts';
import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { usersFullSyncCursor } from '../src/warehouse/cursors/users-full-sync-cursor.ts';
import type { JobContext } from './define-job.ts';
import { defineJob } from './define-job.ts';
import { usersSyncPayload } from './payloads.ts';

export interface UsersSyncResult extends LoadCounts {
  users: number;
  uids: string[];
  /** Stored users this (complete) listing did not show, newly marked removed. */
  removed: string[];
}

export async function syncUsers(ctx: JobContext, orgId: string): Promise<UsersSyncResult> {
  const { v2 } = ctx.org(orgId);
  const result: UsersSyncResult = {
    users: 0,
    uids: [],
    removed: [],
    inserted: 0,
    updated: 0,
    unchanged: 0,
    stale: 0,
    quarantined: 0,
  };
  const pages = v2.listUsersPages({ signal: ctx.signal });
  const iterator = pages[Symbol.asyncIterator]();
  let next = await iterator.next();
  /** Every uid the listing showed, malformed users too (they are not gone, only unreadable). */
  const listed: string[] = [];
  while (!next.done) {
    const page = next.value;
    for (const user of [...page.users, ...page.rejected]) {
      const uid = (user as { uid?: unknown } | null)?.uid;
      if (typeof uid === 'string') listed.push(uid);
    }
    next = await iterator.next();
    if (next.done && listed.length > 0) {
      result.removed = await ctx.warehouse.markUnlistedUsersRemoved(orgId, listed);
      if (result.removed.length > 0) {
        ctx.log.info({ orgId, removed: result.removed }, 'users gone from the listing are no longer polled');
      }
    }
    // The cursor moves with the last page only, in the same transaction as that page's users.
    const cursors = next.done ? [usersFullSyncCursor().write({ at: new Date().toISOString() })] : [];
    const loaded = await ctx.warehouse.applyBatch(
      {
        orgId,
        arrivedVia: 'poll',
        items: [...page.users, ...page.rejected].map((raw) => ({ kind: 'user' as const, raw })),
      },
      { cursors },
      { log: ctx.log },
    );
    for (const key of ['inserted', 'updated', 'unchanged', 'stale', 'quarantined'] as const)
      result[key] += loaded[key];
    result.users += page.users.length;
    for (const user of page.users) if (typeof user.uid === 'string') result.uids.push(user.uid);
  }
  return result;
}

export const usersSync = defineJob({
  name: 'users.sync',
  payload: usersSyncPayload,
  options: { ...JOB_RETRIES.fetch, priority: JOB_PRIORITIES['users.sync'] },
  jobId: (p) => jobKey('users.sync', p.orgId),
  run: (ctx, payload) => syncUsers(ctx, payload.orgId),
});
