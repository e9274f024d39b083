/**
 * v2 REST under the API base URL: users, per-resource record windows, connection events.
 *
 * Choices where the spec is open: records match a window by the UTC date of `start_time` (or, with
 * the `windowBy: 'local'` option, by the user's local date of it: the other reading); the range
 * may span at most 30 days (end_date − start_date ≤ 30); deleted records are served with `deleted_at`
 * set; a `limit` above the maximum is reduced to it; any page without items answers `{}`.
 */

import { authorizeV2 } from './auth.ts';
import type { SandboxCore } from './core.ts';
import { intParam, type RequestContext, readJsonBody, sendJson, sendText } from './http-util.ts';
import { churnUsersListing } from './listing-churn.ts';
import { addUser, ConflictError, deleteUser } from './mutations.ts';
import { DAY_MS, parseDay, startOfUtcDay, utcDay } from './time.ts';
import { RESOURCE_PATHS, type User } from './types.ts';

const MAX_RANGE_DAYS = 30;

export async function handleV2(core: SandboxCore, ctx: RequestContext): Promise<void> {
  const parts = ctx.path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'connections' && parts.length === 1 && ctx.method === 'GET') {
    const org = authorizeV2(core, ctx, null);
    if (org) connections(core, ctx, org.orgId);
    return;
  }
  if (parts[0] !== 'organizations' || parts.length < 3) return notFound(ctx);
  const orgId = parts[1] as string;
  const collection = parts[2];
  if (collection === 'connections' && parts.length === 3 && ctx.method === 'GET') {
    if (authorizeV2(core, ctx, orgId)) connections(core, ctx, orgId);
    return;
  }
  if (collection !== 'users') return notFound(ctx);
  if (parts.length === 3) {
    if (ctx.method === 'GET') {
      if (authorizeV2(core, ctx, orgId)) listUsers(core, ctx, orgId);
      return;
    }
    if (ctx.method === 'POST') {
      if (authorizeV2(core, ctx, orgId)) await provisionUser(core, ctx, orgId);
      return;
    }
  }
  const uid = parts[3] as string;
  if (parts.length === 4 && (ctx.method === 'GET' || ctx.method === 'DELETE')) {
    if (!authorizeV2(core, ctx, orgId)) return;
    const user = orgId === core.state.org.orgId ? core.state.users.get(uid) : undefined;
    if (!user) return notFound(ctx);
    if (ctx.method === 'DELETE') deleteUser(core, uid);
    return sendJson(ctx, 200, user);
  }
  const resource = RESOURCE_PATHS[parts[4] ?? ''];
  if (parts.length === 5 && ctx.method === 'GET' && resource) {
    if (!authorizeV2(core, ctx, orgId)) return;
    const window = dateWindow(core, ctx);
    if (!window) return;
    if (orgId !== core.state.org.orgId || !core.state.users.has(uid)) return notFound(ctx);
    const sources = sourceFilter(ctx);
    const bodies: string[] = [];
    for (const entry of core.state.recordsFor(uid, resource)) {
      const day = core.settings.windowBy === 'local' ? entry.localDay : entry.startDay;
      if (day < window.start || day > window.end) continue;
      if (sources && !sources.has(entry.record.source.type)) continue;
      bodies.push(entry.json);
    }
    return sendJson(ctx, 200, `{"data":[${bodies.join(',')}]}`);
  }
  notFound(ctx);
}

function notFound(ctx: RequestContext) {
  sendJson(ctx, 404, { errors: ['Not Found'] });
}

function sourceFilter(ctx: RequestContext): Set<string> | null {
  const raw = ctx.query.get('source');
  if (!raw) return null;
  return new Set(
    raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
}

/** start_date/end_date as YYYY-MM-DD strings, defaulting to the current UTC day; null after a 400. */
function dateWindow(core: SandboxCore, ctx: RequestContext): { start: string; end: string } | null {
  const today = utcDay(core.clock.now());
  const startRaw = ctx.query.get('start_date') ?? today;
  const endRaw = ctx.query.get('end_date') ?? today;
  const start = parseDay(startRaw);
  const end = parseDay(endRaw);
  if (start === null || end === null) {
    sendText(ctx, 400, 'Bad Request: start_date and end_date must be dates of the form YYYY-MM-DD');
    return null;
  }
  if (end < start) {
    sendText(ctx, 400, 'Bad Request: end_date is before start_date');
    return null;
  }
  if (end - start > MAX_RANGE_DAYS * DAY_MS) {
    sendText(ctx, 400, `Bad Request: the date range exceeds ${MAX_RANGE_DAYS} days`);
    return null;
  }
  return { start: startRaw, end: endRaw };
}

/** Reads `limit` (capped at `max`) and a page index from `pageParam`; null after a 400. */
function paging(
  ctx: RequestContext,
  pageParam: string,
  defaultLimit: number,
  max: number,
): { limit: number; page: number } | null {
  const limit = intParam(ctx.query, 'limit', defaultLimit);
  const page = intParam(ctx.query, pageParam, 0);
  if (limit === null || page === null || limit < 1) {
    sendText(
      ctx,
      400,
      `Bad Request: limit must be a positive integer and ${pageParam} a page index (0, 1, 2, ...)`,
    );
    return null;
  }
  return { limit: Math.min(limit, max), page };
}

function field(user: User, path: string): unknown {
  let value: unknown = user;
  for (const key of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[key];
  return value;
}

/** `users` ordered by `keys` (`-name` descending), each user's key values read once, not per comparison. */
function sortUsers(users: User[], keys: string[]): User[] {
  const fields = keys.map((key) => ({ name: key.replace(/^-/, ''), sign: key.startsWith('-') ? -1 : 1 }));
  const keyed = users.map((user) => ({ user, values: fields.map((f) => String(field(user, f.name) ?? '')) }));
  keyed.sort((a, b) => {
    for (let i = 0; i < fields.length; i++) {
      const va = a.values[i] as string;
      const vb = b.values[i] as string;
      if (va !== vb) return (va < vb ? -1 : 1) * (fields[i] as { sign: number }).sign;
    }
    return 0;
  });
  return keyed.map((k) => k.user);
}

function listUsers(core: SandboxCore, ctx: RequestContext, orgId: string) {
  const p = paging(ctx, 'offset', 100, core.faults.current.usersLimitCap ?? 1000);
  if (!p) return;
  const sorts = [...ctx.query.getAll('sort[]'), ...ctx.query.getAll('sort')].flatMap((s) => s.split(','));
  const keys = sorts.length > 0 ? sorts : ['created_at', 'uid'];
  let users =
    orgId === core.state.org.orgId
      ? core.state.sortedUsers(keys.join(','), (all) => sortUsers(all, keys))
      : [];
  // Filters: q[]=field=value (also q[field]=value).
  const filters: [string, string][] = [];
  for (const [key, value] of ctx.query) {
    if (key === 'q[]' || key === 'q') {
      const eq = value.indexOf('=');
      if (eq > 0) filters.push([value.slice(0, eq), value.slice(eq + 1)]);
    } else {
      const m = /^q\[(.+)\]$/.exec(key);
      if (m?.[1]) filters.push([m[1], value]);
    }
  }
  if (filters.length > 0) users = users.filter((u) => filters.every(([f, v]) => String(field(u, f)) === v));
  // The cut-short fault: the listing ends early while meta.total still counts every user.
  const cut = core.faults.current.usersListingCutShort;
  const served = cut === null ? users : users.slice(0, cut);
  const page = served.slice(p.page * p.limit, (p.page + 1) * p.limit);
  if (page.length === 0) return sendJson(ctx, 200, {});
  if (core.faults.current.usersListingWithoutMeta) sendJson(ctx, 200, { data: page });
  else sendJson(ctx, 200, { data: page, meta: { total: users.length, limit: p.limit, offset: p.page } });
  churnUsersListing(core, (p.page + 1) * p.limit < served.length);
}

async function provisionUser(core: SandboxCore, ctx: RequestContext, orgId: string): Promise<void> {
  const body = await readJsonBody(ctx.req);
  const input = (body?.user as Record<string, unknown> | undefined) ?? body;
  const uid = input?.uid;
  if (typeof uid !== 'string' || uid === '') return sendText(ctx, 400, 'Bad Request: uid is required');
  if (orgId !== core.state.org.orgId)
    return sendJson(ctx, 401, { errors: ['token not authorized to access the organization'] });
  const location = (input?.location as Record<string, string> | undefined) ?? {};
  try {
    const user = addUser(core, { uid, timezone: location.timezone, country_code: location.country_code });
    sendJson(ctx, 201, user);
  } catch (error) {
    if (error instanceof ConflictError) return sendJson(ctx, 409, { errors: [error.message] });
    throw error;
  }
}

function connections(core: SandboxCore, ctx: RequestContext, orgId: string) {
  const startRaw = ctx.query.get('start_date');
  const endRaw = ctx.query.get('end_date');
  let from = core.settings.eventsAvailableFromMs;
  let until = Number.POSITIVE_INFINITY;
  if (startRaw !== null || endRaw !== null) {
    if (startRaw !== null && endRaw === null)
      return sendText(ctx, 400, 'Bad Request: end_date is required with start_date');
    const start = startRaw === null ? null : parseDay(startRaw);
    const end = endRaw === null ? null : parseDay(endRaw);
    if ((startRaw !== null && start === null) || end === null) {
      return sendText(ctx, 400, 'Bad Request: start_date and end_date must be dates of the form YYYY-MM-DD');
    }
    if (start !== null && (end < start || end - start > MAX_RANGE_DAYS * DAY_MS)) {
      return sendText(ctx, 400, `Bad Request: the date range must be at most ${MAX_RANGE_DAYS} days`);
    }
    from = Math.max(from, start ?? from);
    until = startOfUtcDay(end) + DAY_MS;
  }
  const p = paging(ctx, 'page', 25, 1000);
  if (!p) return;
  const all =
    orgId === core.state.org.orgId
      ? core.state.connections.filter((c) => c.createdAtMs >= from && c.createdAtMs < until)
      : [];
  const page = all.slice(p.page * p.limit, (p.page + 1) * p.limit);
  if (page.length === 0) return sendJson(ctx, 200, {});
  sendJson(
    ctx,
    200,
    `{"connections":[${page.map((c) => c.json).join(',')}],"meta":${JSON.stringify({ limit: p.limit, page: p.page, total: all.length })}}`,
  );
}
