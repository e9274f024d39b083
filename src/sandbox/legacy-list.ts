/**
 * Legacy list responses: `{ summary, <object>: [...] }` for the user-level, org-level and latest lists.
 *
 * Paging: `offset` is a number of records to skip (v1 reading); when only `page` is given (1-based),
 * offset = (page − 1) × limit. `limit` defaults to 100 and is reduced to 1000 (or to the
 * `latestLimitCap` fault on latest endpoints). `next`/`previous` are absolute URLs repeating the
 * request's query (its `access_token` included) with a new `offset`; `next` is null after the last page
 * unless the `legacyNextWraps` fault sends it back to the first page. The `legacyPaging` fault pages by
 * `page` alone or by both together (links in that style), `legacyListingCutShort` serves only part of a
 * list while `results` counts all of it.
 */
import type { SandboxCore } from './core.ts';
import { intParam, type RequestContext, sendJson } from './http-util.ts';
import { parseListDate } from './legacy-timestamps.ts';
import { DAY_MS, isoSeconds } from './time.ts';
import type { LegacyObject, LegacyRecord } from './types.ts';

export function renderLegacy(record: LegacyRecord, expanded: boolean): Record<string, unknown> {
  if (expanded) return record;
  const { extras: _e, activity_id: _a, ...rest } = record;
  return rest;
}

export function listLegacy(
  core: SandboxCore,
  ctx: RequestContext,
  object: LegacyObject,
  userId: string | null,
  latest: boolean,
) {
  const now = core.clock.now();
  const start = parseListDate(ctx.query.get('start_date'), now - DAY_MS);
  const end = parseListDate(ctx.query.get('end_date'), now);
  if (start === null || end === null) {
    return sendJson(ctx, 422, {
      code: 422,
      message: 'start_date and end_date must look like YYYY-MM-DDThh:mm:ssZ or YYYY-MM-DDThh:mm:ss.ms-hh:mm',
    });
  }
  let limit = intParam(ctx.query, 'limit', 100);
  const page = intParam(ctx.query, 'page', 1);
  const offset = intParam(ctx.query, 'offset', 0);
  if (limit === null || offset === null || page === null || limit < 1 || page < 1) {
    return sendJson(ctx, 422, { code: 422, message: 'limit, offset and page must be positive integers' });
  }
  limit = Math.min(limit, 1000);
  const faults = core.faults.current;
  if (latest && faults.latestLimitCap !== null) limit = Math.min(limit, faults.latestLimitCap);
  const paging = faults.legacyPaging;
  // Where the page starts, by the paging fault (default: `offset`, or `page` when no `offset` is sent).
  let skip: number;
  if (paging === 'page') skip = (page - 1) * limit;
  else if (paging === 'page-and-offset') skip = offset + (page - 1) * limit;
  else skip = !ctx.query.has('offset') && ctx.query.has('page') ? (page - 1) * limit : offset;
  const expanded = ctx.query.get('expanded') === '1' || ctx.query.get('expanded') === 'true';
  const sourceParam = ctx.query.get('source');
  const sources = sourceParam ? new Set(sourceParam.split(',').map((s) => s.trim())) : null;
  const key: 'last_updated' | 'timestamp' = latest ? 'last_updated' : 'timestamp';
  const all = [...core.state.legacyStore(object).values()]
    .filter((r) => userId === null || r.user_id === userId)
    .filter((r) => !sources || sources.has(r.source))
    .filter((r) => {
      const t = Date.parse(r[key]);
      return t >= start && t <= end;
    })
    .sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : a._id < b._id ? -1 : 1));
  // The cut-short fault: only the first `after` records are ever served; `results` still counts all.
  const cut = faults.legacyListingCutShort;
  const cutApplies = cut !== null && all.length > cut.after && (!cut.objects || cut.objects.includes(object));
  const served = cutApplies ? all.slice(0, cut.after) : all;
  const items = served.slice(skip, skip + limit).map((r) => renderLegacy(r, expanded));
  /** A link to the page starting at record `to` (0: the first page), in the paging fault's style. */
  const link = (to: number): string => {
    const params = new URLSearchParams(ctx.query);
    params.set('limit', String(limit));
    if (paging === 'offset') {
      params.delete('page');
      params.set('offset', String(to));
    } else if (paging === 'page') {
      params.delete('offset');
      params.set('page', String(Math.floor(to / limit) + 1));
    } else if (to === 0) {
      params.set('offset', '0');
      params.set('page', '1');
    } else {
      // Keeps the request's offset: the next page is the page number after this one.
      params.set('offset', String(offset));
      params.set('page', String(Math.max(1, Math.floor((to - offset) / limit) + 1)));
    }
    return `${ctx.baseUrl}${ctx.path}?${params}`;
  };
  const linkedTotal = cutApplies && cut.style === 'next-null' ? served.length : all.length;
  let next: string | null = skip + limit < linkedTotal ? link(skip + limit) : null;
  if (next === null && faults.legacyNextWraps) next = link(0);
  const params: Record<string, string> = { start_date: isoSeconds(start), end_date: isoSeconds(end) };
  for (const [k, v] of ctx.query) if (k !== 'access_token' && k !== 'authentication_token') params[k] = v;
  sendJson(ctx, 200, {
    summary: {
      status: 200,
      message: 'Ok',
      results: all.length,
      start_date: isoSeconds(start),
      end_date: isoSeconds(end),
      offset: skip,
      limit,
      previous: skip > 0 ? link(Math.max(0, skip - limit)) : null,
      next,
      params,
    },
    [object]: items,
  });
}

export function singleLegacy(ctx: RequestContext, object: LegacyObject, record: LegacyRecord) {
  const expanded = ctx.query.get('expanded') === '1' || ctx.query.get('expanded') === 'true';
  sendJson(ctx, 200, {
    summary: {
      status: 200,
      message: 'Ok',
      results: 1,
      start_date: null,
      end_date: null,
      offset: 0,
      limit: 1,
      previous: null,
      next: null,
      params: {},
    },
    [object]: [renderLegacy(record, expanded)],
  });
}
