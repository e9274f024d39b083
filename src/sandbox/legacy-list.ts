/**
 * Legacy list responses: `{ summary, <object>: [...] }` for the user-level, org-level and latest lists.
 *
 * Paging: `offset` is a number of records to skip (v1 reading); when only `page` is given (1-based),
 * offset = (page − 1) × limit. `limit` defaults to 100 and is reduced to 1000 (or to the
 * `latestLimitCap` fault on latest endpoints). `next`/`previous` are absolute URLs repeating the
 * request's query (its `access_token` included) with a new `offset`; `next` is null after the last page
 * unless the `legacyNextWraps` fault sends it back to offset 0.
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
  let offset = intParam(ctx.query, 'offset', 0);
  if (limit === null || offset === null || page === null || limit < 1 || page < 1) {
    return sendJson(ctx, 422, { code: 422, message: 'limit, offset and page must be positive integers' });
  }
  limit = Math.min(limit, 1000);
  const cap = core.faults.current.latestLimitCap;
  if (latest && cap !== null) limit = Math.min(limit, cap);
  if (!ctx.query.has('offset') && ctx.query.has('page')) offset = (page - 1) * limit;
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
  const items = all.slice(offset, offset + limit).map((r) => renderLegacy(r, expanded));
  const link = (to: number): string => {
    const params = new URLSearchParams(ctx.query);
    params.delete('page');
    params.set('offset', String(to));
    params.set('limit', String(limit));
    return `${ctx.baseUrl}${ctx.path}?${params}`;
  };
  let next: string | null = offset + limit < all.length ? link(offset + limit) : null;
  if (next === null && core.faults.current.legacyNextWraps) next = link(0);
  const params: Record<string, string> = { start_date: isoSeconds(start), end_date: isoSeconds(end) };
  for (const [k, v] of ctx.query) if (k !== 'access_token' && k !== 'authentication_token') params[k] = v;
  sendJson(ctx, 200, {
    summary: {
      status: 200,
      message: 'Ok',
      results: all.length,
      start_date: isoSeconds(start),
      end_date: isoSeconds(end),
      offset,
      limit,
      previous: offset > 0 ? link(Math.max(0, offset - limit)) : null,
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
