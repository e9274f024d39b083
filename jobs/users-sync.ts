/**
 * users.sync: reads every user of the organization (page-index pager, 1,000 per page) and loads each
 * page as one batch. The cursor records when the list was last read completely.
 */
import { z } from 'zod';
import { applyBatch } from '../src/warehouse/apply-batch.ts';
import type { LoadCounts } from '../src/warehouse/batch.ts';
import type { JobContext } from './job-context.ts';
import { defineJob } from './job-definition.ts';

export const usersSyncPayload = z.object({ orgId: z.string().min(1) });

export interface UsersSyncResult extends LoadCounts {
  users: number;
  uids: string[];
}

export async function syncUsers(ctx: JobContext, orgId: string): Promise<UsersSyncResult> {
  const { v2 } = ctx.org(orgId);
  const result: UsersSyncResult = {
    users: 0,
    uids: [],
    inserted: 0,
    updated: 0,
    unchanged: 0,
    stale: 0,
    quarantined: 0,
  };
  const pages = v2.listUsersPages({ signal: ctx.signal });
  const iterator = pages[Symbol.asyncIterator]();
  let next = await iterator.next();
  while (!next.done) {
    const page = next.value;
    next = await iterator.next();
    // The cursor moves with the last page only, in the same transaction as that page's users.
    const cursors = next.done
      ? [{ key: 'users:last_full_sync', value: { at: new Date().toISOString() } }]
      : [];
    const loaded = await applyBatch(
      ctx.warehouse,
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
  options: { attempts: 5, backoff: { type: 'exponential', delay: 2000 }, priority: 5 },
  jobId: (p) => `users.sync|${encodeURIComponent(p.orgId)}`,
  run: (ctx, payload) => syncUsers(ctx, payload.orgId),
});
