/**
 * legacy.fetch: the targeted retrieval a push notification announced, loaded with arrived_via `push`.
 * Why and how: README.md, "`legacy-fetch.ts`".
 */
import type { SummaryPage } from '../src/legacy/legacy-summary-pager.ts';
import type { LegacyPagesResult } from '../src/legacy/load-legacy-pages.ts';
import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { defineJob } from './define-job.ts';
import { type LegacyFetchPayload, legacyFetchPayload } from './payloads.ts';

export interface LegacyFetchResult extends LegacyPagesResult {
  mode: 'record' | 'activity' | 'user-window' | 'org-window';
  /** Record mode: the platform answered 404 and the stored row (if any) is now marked deleted. */
  deleted?: boolean;
}

/**
 * Half-width of the activity-date window (see jobs/README.md, `legacy-fetch.ts`: one day covers every
 * UTC offset).
 */
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
  if (list.length > 0) yield { items: list, rejected: [], summary: {}, request: {} };
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
      orgId,
      object,
      arrivedVia: 'push' as const,
      signal: ctx.signal,
    };
    if (recordId && userId) {
      const answer = await org.findLegacyRecord({ userId, object, recordId, signal: ctx.signal });
      const pages = onePage(answer.found ? answer.items : []);
      const loaded = await ctx.warehouse.loadLegacyPages({ ...common, pages, log: ctx.log });
      if (answer.found) return { ...loaded, mode: 'record' };
      const marked = await ctx.warehouse.markLegacyDeleted(orgId, object, [recordId]);
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
      return {
        ...(await ctx.warehouse.loadLegacyPages({ ...common, pages, log: ctx.log })),
        mode: 'activity',
      };
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
    const loaded = await ctx.warehouse.loadLegacyPages({ ...common, pages, log: ctx.log });
    return { ...loaded, mode: userId ? 'user-window' : 'org-window' };
  },
});
