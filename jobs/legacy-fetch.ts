/**
 * legacy.fetch: the targeted retrieval a push notification announced, loaded with arrived_via `push`.
 *
 * legacy.fetch: the targeted retrieval a push notification announced, loaded with arrived_via `push`.
 * push.drain queues one per row of the durable push queue (`fetchId`, validic_sync.push_fetches), with
 * what that row absorbed:
 *
 * - the provider's documented items of one user and object (`activityFrom`/`activityTo`, `sources`):
 *   that user's object list (GET …/users/{user}/{object}.json, by activity timestamp) from the earliest
 *   announced activity date − ACTIVITY_MARGIN_MS to the latest + ACTIVITY_MARGIN_MS (in parts of at
 *   most ACTIVITY_SPAN_MS, 30 days: a fetch stored since migration 0025 covers one 28-day bucket, one
 *   part; src/push/push-items.ts), filtered by the source when one was announced. The provider's own suggestion is
 *   start_date = end_date = activity_date; an exact-instant filter misses the record whenever the two
 *   sides round or zone the instant differently (fractions, `+00:00` vs `Z`, a routine day stamped at
 *   local midnight, a date given as local wall time), so the window is one day either side: it covers
 *   every UTC offset (−12…+14 h) and stays one user, one object, one app, so it is still a page or two;
 * - record id and user id known: that one record (GET …/users/{user}/{object}/{id}.json); a 404 means
 *   it is gone: nothing is loaded, and a row the warehouse holds for it is marked deleted;
 * - a latest window (`updatedFrom`/`updatedTo`: around an announced `last_updated`, or over refused
 *   minutes), user-level when the user is known, org-level when not; without one, the last
 *   `sync.legacyWindowHours`.
 *
 * After its load commits it marks its row done with the requests it took (a crash in between only reads
 * the same records again); once no attempt is left (a permanent error, or the last retry; a 429 or an
 * outage spends none) it marks the row failed with the reason. Jobs queued before the durable queue
 * existed (`activityDate`, `window`, `lastUpdated`, no `fetchId`) still run as they were.
 *
 * Whatever it loads, the loader's "latest last_updated wins" keeps the table right; it moves no cursor
 * (the scheduled legacy.sync owns those and remains the safety net for anything push missed).
 */

import { z } from 'zod';
import { toError } from '../src/errors/index.ts';
import type { SummaryPage } from '../src/legacy/legacy-client.ts';
import type { LegacyPagesResult } from '../src/legacy/load-legacy-pages.ts';
import { addLoadResult } from '../src/pipeline/batch.ts';
import { ACTIVITY_MARGIN_MS, ACTIVITY_SPAN_MS } from '../src/push/push-items.ts';
import { isoInstant, jobKey, retryOptionsOf } from '../src/queue/job-definition.ts';
import { jobRetryDecision } from '../src/queue/job-retry-decision.ts';
import { LEGACY_OBJECTS } from '../src/validic/platform-limits.ts';
import { type CatalogJobContext, defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
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
  /** Coalescing window the announcement fell in (jobs queued before the durable push queue). */
  window: z.string().optional(),
  /**
   * The row of validic_sync.push_fetches this job carries out (queued by push.drain): marked done with
   * the requests it took, or failed with the reason.
   */
  fetchId: z.string().min(1).optional(),
  /** Earliest and latest announced `activity_date` (ISO instants): the user's object list around them. */
  activityFrom: isoInstant.optional(),
  activityTo: isoInstant.optional(),
  /** A latest window by `last_updated` (ISO instants), read exactly. */
  updatedFrom: isoInstant.optional(),
  updatedTo: isoInstant.optional(),
  /** Sources announced: the retrieval is filtered by one; several (or none) read every source. */
  sources: z.array(z.string().min(1)).optional(),
});
export type LegacyFetchPayload = z.infer<typeof legacyFetchPayload>;

export interface LegacyFetchResult extends LegacyPagesResult {
  mode: 'record' | 'activity' | 'user-window' | 'org-window';
  /** Record mode: the platform answered 404 and the stored row (if any) is now marked deleted. */
  deleted?: boolean;
  /** Requests made (at least one per list read, empty or not). */
  requests: number;
}

export const legacyFetchJobId = (p: LegacyFetchPayload) =>
  p.fetchId
    ? // One job per row of the durable push queue (push.drain queues it; a lost one is queued again).
      jobKey('legacy.fetch', p.orgId, 'fetch', p.fetchId)
    : p.activityDate
      ? // Jobs queued before the durable queue: one per (user, object, activity date, source) and window.
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
  if (list.length > 0) yield { items: list, rejected: [], summary: {}, request: {}, pass: 0 };
}

/** Consecutive ranges of at most `span` covering [start, end]. */
function spans(start: number, end: number, span: number): [number, number][] {
  const out: [number, number][] = [];
  for (let from = start; from < end || out.length === 0; from += span)
    out.push([from, Math.min(end, from + span)]);
  return out;
}

async function fetchAnnounced(
  ctx: CatalogJobContext,
  payload: LegacyFetchPayload,
): Promise<LegacyFetchResult> {
  const { orgId, object, recordId, userId, lastUpdated, source } = payload;
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
    if (answer.found) return { ...loaded, mode: 'record', requests: 1 };
    const marked = await ctx.warehouse.markLegacyDeleted(orgId, object, [recordId]);
    return { ...loaded, mode: 'record', deleted: marked.length > 0, requests: 1 };
  }
  const activityFrom = payload.activityFrom ?? payload.activityDate;
  const activityTo = payload.activityTo ?? payload.activityDate;
  if (activityFrom && activityTo) {
    // One source announced: filter by it; several (or none): every source of that user and object.
    const only = source ?? (payload.sources?.length === 1 ? payload.sources[0] : undefined);
    let result: LegacyFetchResult | undefined;
    for (const [from, to] of spans(
      Date.parse(activityFrom) - ACTIVITY_MARGIN_MS,
      Date.parse(activityTo) + ACTIVITY_MARGIN_MS,
      ACTIVITY_SPAN_MS,
    )) {
      const range = {
        startDate: new Date(from),
        endDate: new Date(to),
        ...(only ? { source: only } : {}),
        signal: ctx.signal,
      };
      const pages = userId
        ? org.legacy.pageUserList(userId, object, range)
        : org.legacy.pageOrgList(object, range);
      const loaded = await ctx.warehouse.loadLegacyPages({ ...common, pages, log: ctx.log });
      const part: LegacyFetchResult = { ...loaded, mode: 'activity', requests: Math.max(1, loaded.pages) };
      if (!result) result = part;
      else {
        addLoadResult(result, part);
        result.records += part.records;
        result.pages += part.pages;
        result.requests += part.requests;
      }
    }
    return result!;
  }
  const settings = ctx.settings.legacyWindow;
  const margin = Math.max(settings.overlapMs, 60_000);
  const now = Date.now();
  const range =
    payload.updatedFrom && payload.updatedTo
      ? { startDate: new Date(payload.updatedFrom), endDate: new Date(payload.updatedTo) }
      : lastUpdated
        ? {
            startDate: new Date(Date.parse(lastUpdated) - margin),
            endDate: new Date(Date.parse(lastUpdated) + margin),
          }
        : { startDate: new Date(now - settings.windowMs), endDate: new Date(now) };
  const pages = userId
    ? org.legacy.pageUserLatest(userId, object, { ...range, signal: ctx.signal })
    : org.legacy.pageLatest(object, { ...range, signal: ctx.signal });
  const loaded = await ctx.warehouse.loadLegacyPages({ ...common, pages, log: ctx.log });
  return { ...loaded, mode: userId ? 'user-window' : 'org-window', requests: Math.max(1, loaded.pages) };
}

export const legacyFetch = defineJob({
  name: 'legacy.fetch',
  payload: legacyFetchPayload,
  jobId: legacyFetchJobId,
  async run(ctx, payload): Promise<LegacyFetchResult> {
    const { fetchId } = payload;
    if (!fetchId) return fetchAnnounced(ctx, payload);
    let result: LegacyFetchResult;
    try {
      result = await fetchAnnounced(ctx, payload);
    } catch (error) {
      // The row keeps the reason once no attempt is left (a 429 or an outage spends none).
      const decision = jobRetryDecision(error);
      const last =
        decision.action === 'fail' ||
        (decision.action === 'retry' && ctx.attempt >= retryOptionsOf(legacyFetch).attempts);
      if (last && !ctx.signal.aborted) await ctx.warehouse.failPushFetch(fetchId, toError(error).message);
      throw error;
    }
    // After the load's commit: a crash in between only reads the same records once more.
    await ctx.warehouse.finishPushFetch(fetchId, { requests: result.requests });
    return result;
  },
});

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'legacy.fetch': { payload: typeof legacyFetchPayload; job: typeof legacyFetch };
  }
}
