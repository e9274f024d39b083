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
import { defineJob } from '../src/queue/job-catalog.ts';
import { isoInstant, jobKey } from '../src/queue/job-definition.ts';
import { LEGACY_OBJECTS } from '../src/validic/platform-limits.ts';
import { type LegacyCursorValue, legacyLatestCursor } from '../src/warehouse/cursors.ts';

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

/** A window wholly after the platform's now lists nothing yet: it is not asked. */
async function* noPages(): AsyncGenerator<never> {}

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
  priority: 20,
  retry: 'fetch',
  jobId: legacyLatestJobId,
  async run(ctx, payload): Promise<LegacyLatestResult> {
    const { orgId, object } = payload;
    const org = ctx.org(orgId);
    const window = { start: new Date(payload.startDate), end: new Date(payload.endDate) };
    const latest = legacyLatestCursor(object);
    const current = await ctx.cursors.read(orgId, latest);
    // The listing asks no further than the platform's now: a record can then only leave it while it is
    // paged (an update stamps it later, a delete removes it), which its count shows (legacy-client.ts).
    const fetchedAt = await platformNowForWindows(ctx.platformClock, () =>
      org.legacy.getOrganization({ signal: ctx.signal }),
    );
    const asked = { start: window.start, end: new Date(Math.min(window.end.getTime(), fetchedAt.getTime())) };
    const cursor: LegacyCursorValue | undefined = nextLegacyCursor(current, window, fetchedAt);
    const listed = new Set<string>();
    const loaded = await ctx.warehouse.loadLegacyPages({
      orgId,
      object,
      arrivedVia: 'legacy',
      pages: collectListedIds(
        asked.end > asked.start
          ? org.legacy.pageLatest(object, { startDate: asked.start, endDate: asked.end, signal: ctx.signal })
          : noPages(),
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
      window: asked,
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
