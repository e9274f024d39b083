/**
 * legacy.latest: one legacy object × one `last_updated` window of the organization-level latest
 * endpoint.
 *
 * Every page is loaded as it arrives; the cursor `legacy:latest:<object>` moves with the window's LAST
 * page (same transaction), so it never passes uncommitted data.
 *
 * Windows of one object run one after another: when `until` is set, the job enqueues the next window
 * (starting `overlap` before this one's end, see planLegacyWindows) after its own commit. Running them
 * in sequence is what keeps the cursor honest: a later window can never commit while an earlier one is
 * still pending or has failed. Objects run in parallel.
 *
 * A listing that does not prove complete (fewer records than `summary.results`, a repeated page: the
 * pager's IncompleteListingError) loads every page read, without the cursor, checks no deletes, enqueues
 * no next window, and fails the job: it is retried, then kept as failed, and the object's cursor stays
 * before the window (the scheduled sync starts from it again; `validic-sync legacy` exits 1).
 *
 * Deletes: once the window is read completely, stored records of the window it no longer lists are
 * queued as suspects, and a pass asks the oldest for by id, within `legacy.deleteChecksPerPass` and
 * `legacy.deleteCheckShare` of the budget; a 404 marks them deleted (confirm-legacy-deletes.ts says
 * exactly when absence counts, and how the budget is kept). The result says how many were asked, found
 * deleted, and are still waiting (`deleteChecksPending`).
 */

import { z } from 'zod';
import { collectListedIds } from '../src/legacy/confirm-legacy-deletes.ts';
import {
  type InstantWindow,
  nextLegacyCursor,
  planLegacyWindows,
  platformNowForWindows,
} from '../src/legacy/legacy-windows.ts';
import type { LegacyPagesResult } from '../src/legacy/load-legacy-pages.ts';
import { isoInstant, jobKey } from '../src/queue/job-definition.ts';
import { LEGACY_OBJECTS } from '../src/validic/platform-limits.ts';
import { type LegacyCursorValue, legacyLatestCursor } from '../src/warehouse/cursors.ts';
import { defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
export const legacyLatestPayload = z
  .object({
    orgId: z.string().min(1),
    object: z.enum(LEGACY_OBJECTS),
    startDate: isoInstant,
    endDate: isoInstant,
    /** End of the whole range: the next window (if any) is enqueued after this one commits. */
    until: isoInstant.optional(),
  })
  .refine((p) => Date.parse(p.startDate) < Date.parse(p.endDate), {
    message: 'startDate must be before endDate',
    path: ['startDate'],
  });
export type LegacyLatestPayload = z.infer<typeof legacyLatestPayload>;

export interface LegacyLatestResult extends LegacyPagesResult {
  object: string;
  startDate: string;
  endDate: string;
  cursorMoved: boolean;
  /** Stored records of the window it no longer listed (queued for delete checks). */
  absent: number;
  /** Delete checks this job's pass asked (one request each), and those found deleted (404). */
  deleteChecks: number;
  deleted: number;
  /** Delete checks of the object still waiting for a later pass (per-pass cap or budget share). */
  deleteChecksPending: number;
  /** The window enqueued next, if any. */
  next: { startDate: string; endDate: string } | null;
}

export const legacyLatestJobId = (p: LegacyLatestPayload) =>
  jobKey('legacy.latest', p.orgId, p.object, p.startDate, p.endDate);

/** The window after `window` in the plan up to `until` (the same windows planLegacyWindows gives). */
export function nextLegacyWindow(
  window: InstantWindow,
  until: Date,
  settings: { windowMs: number; overlapMs: number },
): InstantWindow | undefined {
  if (window.end.getTime() >= until.getTime()) return undefined;
  return planLegacyWindows(new Date(window.end.getTime() - settings.overlapMs), until, settings)[0];
}

export const legacyLatest = defineJob({
  name: 'legacy.latest',
  payload: legacyLatestPayload,
  jobId: legacyLatestJobId,
  async run(ctx, payload): Promise<LegacyLatestResult> {
    const { orgId, object } = payload;
    const org = ctx.org(orgId);
    const window = { start: new Date(payload.startDate), end: new Date(payload.endDate) };
    const latest = legacyLatestCursor(object);
    const current = await ctx.cursors.read(orgId, latest);
    // The cursor covers no more than the platform's now before the first request (its clock, not the
    // worker's). The scheduled windows end at the platform's now when they were planned, so while one is
    // paged its records can only leave it (an update stamps them later, a delete removes them), which its
    // count shows (legacy-client.ts); a window asked into the future (`legacy --to`) is read whole all the
    // same (a record stamped ahead of the platform's clock is the platform's to serve), and the cursor
    // still stops at the platform's now.
    const { coveredUntil: fetchedAt } = await platformNowForWindows(ctx.platformClock, () =>
      org.legacy.getOrganization({ signal: ctx.signal }),
    );
    const cursor: LegacyCursorValue | undefined = nextLegacyCursor(current, window, fetchedAt);
    const listed = new Set<string>();
    const loaded = await ctx.warehouse.loadLegacyPages({
      orgId,
      object,
      arrivedVia: 'legacy',
      pages: collectListedIds(
        org.legacy.pageLatest(object, { startDate: window.start, endDate: window.end, signal: ctx.signal }),
        listed,
      ),
      progress: cursor ? { cursors: [latest.write(cursor)] } : {},
      signal: ctx.signal,
      log: ctx.log,
    });

    // Every page is read and committed, and the listing proved complete (else the pager threw, the
    // pages read are loaded without the cursor, and the job is retried): what the window no longer lists
    // is deleted or edited since.
    const confirmed = await org.confirmLegacyDeletes({
      object,
      window,
      listed,
      signal: ctx.signal,
      log: ctx.log,
    });

    let next: LegacyLatestResult['next'] = null;
    if (payload.until) {
      const following = nextLegacyWindow(window, new Date(payload.until), ctx.settings.legacyWindow);
      if (following) {
        next = { startDate: following.start.toISOString(), endDate: following.end.toISOString() };
        await ctx.enqueue('legacy.latest', { orgId, object, ...next, until: payload.until });
      }
    }
    ctx.log.debug(
      { object, startDate: payload.startDate, endDate: payload.endDate, records: loaded.records },
      'legacy window loaded',
    );
    return {
      ...loaded,
      object,
      startDate: payload.startDate,
      endDate: payload.endDate,
      cursorMoved: cursor !== undefined,
      absent: confirmed.absent,
      deleteChecks: confirmed.asked,
      deleted: confirmed.deleted.length,
      deleteChecksPending: confirmed.pending,
      next,
    };
  },
});

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'legacy.latest': { payload: typeof legacyLatestPayload; job: typeof legacyLatest };
  }
}
