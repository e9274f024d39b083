/**
 * legacy.latest: one legacy object × one `last_updated` window of the organization-level latest
 * endpoint. Every page is loaded as it arrives; the cursor `legacy:latest:<object>` moves with the
 * window's LAST page (same transaction), so it never passes uncommitted data.
 *
 * Windows of one object run one after another: when `until` is set, the job enqueues the next window
 * (starting `overlap` before this one's end, see planLegacyWindows) after its own commit. Running them
 * in sequence is what keeps the cursor honest: a later window can never commit while an earlier one is
 * still pending or has failed. Objects run in parallel.
 *
 * Deletes: once the window is read to its end, stored records of the window it no longer lists are
 * asked for by id; a 404 marks them deleted (confirm-legacy-deletes.ts says exactly when absence counts).
 */
import { z } from 'zod';
import { collectListedIds, confirmLegacyDeletes } from '../src/legacy/confirm-legacy-deletes.ts';
import {
  type LegacyCursorValue,
  legacyCursorKey,
  nextLegacyCursor,
  parseLegacyCursor,
} from '../src/legacy/legacy-cursor.ts';
import { LEGACY_OBJECTS } from '../src/legacy/legacy-objects.ts';
import { type InstantWindow, planLegacyWindows } from '../src/legacy/legacy-windows.ts';
import { type LegacyPagesResult, loadLegacyPages } from '../src/legacy/load-legacy-pages.ts';
import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { isoInstant } from '../src/queue/payload-dates.ts';
import { readCursor } from '../src/warehouse/checkpoints.ts';
import { defineJob } from './define-job.ts';

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
  /** Stored records of the window it no longer listed, and those of them found deleted (404). */
  absent: number;
  deleted: number;
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
  options: { ...JOB_RETRIES.fetch, priority: JOB_PRIORITIES['legacy.latest'] },
  jobId: legacyLatestJobId,
  async run(ctx, payload): Promise<LegacyLatestResult> {
    const { orgId, object } = payload;
    const org = ctx.org(orgId);
    const window = { start: new Date(payload.startDate), end: new Date(payload.endDate) };
    const key = legacyCursorKey(object);
    const current = parseLegacyCursor(await readCursor(ctx.warehouse.db, orgId, key));
    const cursor: LegacyCursorValue | undefined = nextLegacyCursor(current, window, new Date());
    const listed = new Set<string>();
    const loaded = await loadLegacyPages({
      warehouse: ctx.warehouse,
      orgId,
      object,
      arrivedVia: 'legacy',
      pages: collectListedIds(
        org.legacy.pageLatest(object, { startDate: window.start, endDate: window.end, signal: ctx.signal }),
        listed,
      ),
      checkpoint: cursor ? { cursors: [{ key, value: cursor }] } : {},
      signal: ctx.signal,
      log: ctx.log,
    });

    // Every page is read and committed: what the window no longer lists is deleted or edited since.
    const confirmed = await confirmLegacyDeletes({
      warehouse: ctx.warehouse,
      org,
      orgId,
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
      deleted: confirmed.deleted.length,
      next,
    };
  },
});
