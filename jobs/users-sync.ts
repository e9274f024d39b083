/**
 * users.sync: reads every user of the organization (page-index pager, 1,000 per page) and loads each
 * page as one batch. The cursor records when the list was last read completely.
 *
 * A complete listing (every page read to the end in this run) is also the evidence that a user is gone:
 * stored users it does not show get `removed_at` and are no longer polled (remove-users.ts); a user it
 * shows again is un-removed by the loader. An empty listing removes nobody (an org whose every user is
 * gone is far less likely than an answer that lost its data). A listing that ends short of its
 * `meta.total`, or repeats a page (IncompleteListingError from the pager), or breaks off on an error,
 * loads the users it showed and removes nobody, and its cursor stays: users.sync then fails like any
 * failed fetch (retried, then kept as failed), while a backfill or the first recent tick, which only need
 * the users, go on with those known after a warning. A page-index pager can skip a user when another user is deleted
 * while it reads; such a user is un-removed by the next listing.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { IncompleteListingError } from '../src/errors/index.ts';
import type { LoadCounts } from '../src/pipeline/batch.ts';
import { jobKey } from '../src/queue/job-definition.ts';
import { usersFullSyncCursor } from '../src/warehouse/cursors.ts';
import { type CatalogJobContext, defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
export const usersSyncPayload = z.object({ orgId: z.string().min(1) });

/**
 * A listing without `meta.total` that would mark more than this share of the known users removed marks
 * none: the pager could not hold it against a count, and a cut-short answer is likelier than an org losing
 * most of its users between two hourly listings.
 */
export const UNCOUNTED_LISTING_MAX_REMOVED_SHARE = 0.5;

/**
 * What a listing did. Counts, not the users' ids: the job's result is kept in Redis with the job, and at
 * 100,000 users a list of ids would be megabytes per hourly run.
 */
export interface UsersSyncResult extends LoadCounts {
  users: number;
  /** Stored users this (complete) listing did not show, newly marked removed: the first 100 (sorted). */
  removed: string[];
  /** How many were newly marked removed. */
  removedCount: number;
  /** Set when the listing proved incomplete: the users read were loaded, nobody was removed. */
  incomplete?: IncompleteListingError;
}

/**
 * Reads the whole listing. With `firstListed`, a complete listing also returns the uids it stored for
 * the first time (users.sync asks only once a listing has been complete before: the first listing of a
 * population would return every uid).
 */
export async function syncUsers(
  ctx: CatalogJobContext,
  orgId: string,
  options: { firstListed?: boolean } = {},
): Promise<UsersSyncResult & { firstListed?: string[] }> {
  const { v2 } = ctx.org(orgId);
  const result: UsersSyncResult = {
    users: 0,
    removed: [],
    removedCount: 0,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    stale: 0,
    quarantined: 0,
  };
  const pages = v2.listUsersPages({ signal: ctx.signal });
  const iterator = pages[Symbol.asyncIterator]();
  // The uids each page showed go to validic_sync.users_listings under this run's id, so one page is held
  // in memory whatever the population and the removal is one anti-join at the end.
  const listingId = randomUUID();
  try {
    await readListing(ctx, orgId, listingId, iterator, result);
    if (!options.firstListed || result.incomplete) return result;
    return { ...result, firstListed: await ctx.warehouse.firstListedUsers(orgId, listingId) };
  } finally {
    await ctx.warehouse.forgetListing(orgId, listingId);
  }
}

async function readListing(
  ctx: CatalogJobContext,
  orgId: string,
  listingId: string,
  iterator: AsyncIterator<{ users: unknown[]; rejected: unknown[]; meta?: { total?: number } }>,
  result: UsersSyncResult,
): Promise<UsersSyncResult> {
  let next = await iterator.next();
  /** Uids the listing showed, malformed users too (they are not gone, only unreadable). */
  let listed = 0;
  /** Whether the server counted its users (`meta.total`): the pager then held the listing against it. */
  let counted = false;
  while (!next.done) {
    const page = next.value;
    const uids: string[] = [];
    for (const user of [...page.users, ...page.rejected]) {
      const uid = (user as { uid?: unknown } | null)?.uid;
      if (typeof uid === 'string') uids.push(uid);
    }
    await ctx.warehouse.recordListedUsers(orgId, listingId, uids);
    listed += uids.length;
    if (page.meta?.total !== undefined) counted = true;
    // A listing that breaks off or proves incomplete (IncompleteListingError) still lands the users it
    // showed, but removes no one and leaves the cursor: only a complete listing is evidence of absence.
    let failure: { error: unknown } | undefined;
    try {
      next = await iterator.next();
    } catch (error) {
      failure = { error };
    }
    if (!failure && next.done && listed > 0) {
      // Without the server's count the listing proves less: it may not remove most of the users at once.
      const marked = await ctx.warehouse.markUnlistedUsersRemoved(
        orgId,
        listingId,
        counted ? {} : { maxShare: UNCOUNTED_LISTING_MAX_REMOVED_SHARE },
      );
      result.removed = marked.removed;
      result.removedCount = marked.removedCount;
      if (marked.removedCount > 0) {
        ctx.log.info(
          { orgId, removed: marked.removedCount, first: marked.removed },
          'users gone from the listing are no longer polled',
        );
      }
      if (marked.withheld > 0) {
        ctx.log.warn(
          { orgId, listed, unlisted: marked.withheld },
          'the users listing (without meta.total) left out more than half of the known users: nobody is marked removed',
        );
      }
    }
    // The cursor moves with the last page only, in the same transaction as that page's users.
    const cursors =
      !failure && next.done ? [usersFullSyncCursor().write({ at: new Date().toISOString() })] : [];
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
    if (failure) {
      if (!(failure.error instanceof IncompleteListingError)) throw failure.error;
      ctx.log.warn(
        { orgId, users: result.users, err: failure.error },
        'users listing incomplete: the users read are loaded, no user is marked removed',
      );
      result.incomplete = failure.error;
      return result;
    }
  }
  return result;
}

/** Users a backfill of new users' history carries (one job per batch). */
export const NEW_USERS_PER_BACKFILL = 500;

export const usersSync = defineJob({
  name: 'users.sync',
  payload: usersSyncPayload,
  jobId: (p) => jobKey('users.sync', p.orgId),
  async run(ctx, payload): Promise<UsersSyncResult & { newUsers: number }> {
    const listedBefore = await ctx.cursors.read(payload.orgId, usersFullSyncCursor());
    const started = new Date().toISOString();
    // After a first complete listing, users this one stores for the first time get their history.
    const { firstListed, ...result } = await syncUsers(ctx, payload.orgId, {
      firstListed: listedBefore !== undefined,
    });
    // Retried like any failed fetch, then kept as failed: a listing that keeps coming up short is visible.
    if (result.incomplete) throw result.incomplete;
    const newUsers = await backfillNewUsers(ctx, payload.orgId, firstListed ?? [], started);
    return { ...result, newUsers };
  },
});

/**
 * Queues `sync.newUserHistoryDays` of history for the users a listing stored first, newest windows
 * first, at backfill's priority (its share of the budget), NEW_USERS_PER_BACKFILL users a job, keyed by
 * the listing's start and the batch's first uid. A user missed here (the process died between the
 * listing's last page and this: the retry finds the user stored) is found by the completeness audit's
 * history cells.
 */
async function backfillNewUsers(
  ctx: CatalogJobContext,
  orgId: string,
  uids: readonly string[],
  since: string,
): Promise<number> {
  const days = ctx.settings.newUserHistoryDays;
  if (days <= 0 || uids.length === 0) return 0;
  const today = new Date();
  const to = today.toISOString().slice(0, 10);
  const from = new Date(today.getTime() - (days - 1) * 86_400_000).toISOString().slice(0, 10);
  for (let i = 0; i < uids.length; i += NEW_USERS_PER_BACKFILL) {
    await ctx.enqueue('records.backfill', {
      orgId,
      from,
      to,
      uids: uids.slice(i, i + NEW_USERS_PER_BACKFILL),
      connections: false,
      newestFirst: true,
      listUsers: false,
      newUsersSince: since,
    });
  }
  if (uids.length > 0)
    ctx.log.info(
      { orgId, users: uids.length, from, to },
      'backfilling the history of users new to the listing',
    );
  return uids.length;
}

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'users.sync': { payload: typeof usersSyncPayload; job: typeof usersSync };
  }
}
