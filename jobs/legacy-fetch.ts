/**
 * legacy.fetch: the targeted retrieval a push notification announced, loaded with arrived_via `push`.
 *
 * - the provider's documented item (user, `activity_date`, `source`): that user's object list
 *   (GET …/users/{user}/{object}.json, by activity timestamp) over ± ACTIVITY_MARGIN_MS around the
 *   activity date, filtered by `source`. The provider's own suggestion is start_date = end_date =
 *   activity_date; an exact-instant filter misses the record whenever the two sides round or zone the
 *   instant differently (fractions, `+00:00` vs `Z`, a routine day stamped at local midnight, a date
 *   given as local wall time), so the window is one day either side: it covers every UTC offset
 *   (−12…+14 h) and stays one user, one object, one app, so it is still a page or two;
 * - record id and user id known: that one record (GET …/users/{user}/{object}/{id}.json); a 404 means
 *   it is gone: nothing is loaded, and a row the warehouse holds for it is marked deleted;
 * - otherwise a small latest window around the announced `last_updated` (± the legacy overlap, at least
 *   one minute), user-level when the user is known, org-level when not; without `last_updated`, the last
 *   `sync.legacyWindowHours`.
 * Whatever it loads, the loader's "latest last_updated wins" keeps the table right; it moves no cursor
 * (the scheduled legacy.sync owns those and remains the safety net for anything push missed).
 */
import { z } from 'zod';
import { findLegacyRecord } from '../src/legacy/get-legacy-record.ts';
import { LEGACY_OBJECTS } from '../src/legacy/legacy-objects.ts';
import type { SummaryPage } from '../src/legacy/legacy-summary-pager.ts';
import { type LegacyPagesResult, loadLegacyPages } from '../src/legacy/load-legacy-pages.ts';
import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { isoInstant } from '../src/queue/payload-dates.ts';
import { markLegacyDeleted } from '../src/warehouse/mark-legacy-deleted.ts';
import { defineJob } from './define-job.ts';

export const legacyFetchPayload = z.object({
  orgId: z.string().min(1),
  object: z.enum(LEGACY_OBJECTS),
  /** The record's `_id`. */
  recordId: z.string().min(1).optional(),
  /** The service user `_id` the record belongs to. */
  userId: z.string().min(1).optional(),
  /** The announced `last_updated` (ISO instant). */
  lastUpdated: isoInstant.optional(),
  /** Row of validic_sync.push_notifications that announced it (tells apart repeats without last_updated). */
  notificationId: z.string().optional(),
  /** The documented item's `activity_date` (ISO instant): the measurement set's timestamp. */
  activityDate: isoInstant.optional(),
  /** The documented item's `source` (the app's short name): filters the retrieval. */
  source: z.string().min(1).optional(),
  /** Coalescing window the announcement fell in: repeats within one window share the job id. */
  window: z.string().optional(),
});
export type LegacyFetchPayload = z.infer<typeof legacyFetchPayload>;

export interface LegacyFetchResult extends LegacyPagesResult {
  mode: 'record' | 'activity' | 'user-window' | 'org-window';
  /** Record mode: the platform answered 404 and the stored row (if any) is now marked deleted. */
  deleted?: boolean;
}

/** Half-width of the activity-date window (see the header comment: one day covers every UTC offset). */
export const ACTIVITY_MARGIN_MS = 24 * 3_600_000;

export const legacyFetchJobId = (p: LegacyFetchPayload) =>
  p.activityDate
    ? // The same (user, object, activity date, source) announced again within one window: one job.
      jobKey('legacy.fetch', p.orgId, p.object, 'activity', p.userId, p.activityDate, p.source, p.window)
    : jobKey(
        'legacy.fetch',
        p.orgId,
        p.object,
        p.recordId,
        p.userId,
        // The same record announced again after a later update is new work; a repeat of one announcement is not.
        p.lastUpdated ?? `n${p.notificationId ?? ''}`,
      );

async function* onePage(list: SummaryPage['items']): AsyncGenerator<SummaryPage> {
  if (list.length > 0) yield { items: list, rejected: [], summary: {}, offset: 0 };
}

export const legacyFetch = defineJob({
  name: 'legacy.fetch',
  payload: legacyFetchPayload,
  options: { ...JOB_RETRIES.fetch, priority: JOB_PRIORITIES['legacy.fetch'] },
  jobId: legacyFetchJobId,
  async run(ctx, payload): Promise<LegacyFetchResult> {
    const { orgId, object, recordId, userId, lastUpdated, activityDate, source } = payload;
    const org = ctx.org(orgId);
    const common = {
      warehouse: ctx.warehouse,
      orgId,
      object,
      arrivedVia: 'push' as const,
      signal: ctx.signal,
    };
    if (recordId && userId) {
      const answer = await findLegacyRecord(org, { userId, object, recordId, signal: ctx.signal });
      const pages = onePage(answer.found ? answer.items : []);
      const loaded = await loadLegacyPages({ ...common, pages, log: ctx.log });
      if (answer.found) return { ...loaded, mode: 'record' };
      const marked = await markLegacyDeleted(ctx.warehouse.db, orgId, object, [recordId]);
      return { ...loaded, mode: 'record', deleted: marked.length > 0 };
    }
    if (activityDate) {
      const at = Date.parse(activityDate);
      const range = {
        startDate: new Date(at - ACTIVITY_MARGIN_MS),
        endDate: new Date(at + ACTIVITY_MARGIN_MS),
        ...(source ? { source } : {}),
        signal: ctx.signal,
      };
      const pages = userId
        ? org.legacy.pageUserList(userId, object, range)
        : org.legacy.pageOrgList(object, range);
      return { ...(await loadLegacyPages({ ...common, pages, log: ctx.log })), mode: 'activity' };
    }
    const settings = ctx.settings.legacyWindow;
    const margin = Math.max(settings.overlapMs, 60_000);
    const now = Date.now();
    const range = lastUpdated
      ? {
          startDate: new Date(Date.parse(lastUpdated) - margin),
          endDate: new Date(Date.parse(lastUpdated) + margin),
        }
      : { startDate: new Date(now - settings.windowMs), endDate: new Date(now) };
    const pages = userId
      ? org.legacy.pageUserLatest(userId, object, { ...range, signal: ctx.signal })
      : org.legacy.pageLatest(object, { ...range, signal: ctx.signal });
    const loaded = await loadLegacyPages({ ...common, pages, log: ctx.log });
    return { ...loaded, mode: userId ? 'user-window' : 'org-window' };
  },
});
