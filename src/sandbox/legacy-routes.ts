/**
 * The sandbox's v1 (legacy) API: its routes, its object lists with their summaries and paging, and the
 * account routes (users, tokens).
 */

import { authorizeLegacyOrg, legacyToken } from './auth.ts';
import type { SandboxCore } from './core.ts';
import { sourceDisplayName } from './generate-data.ts';
import { intParam, type RequestContext, readJsonBody, sendJson } from './http-util.ts';
import { churnLegacyListing } from './listing-churn.ts';
import { addUser, storeLegacyRecords } from './mutations.ts';
import { DAY_MS, formatOffset, isoSeconds, normalizeTimestamp, parseListDate } from './time.ts';
import { LEGACY_OBJECTS, type LegacyObject, type LegacyRecord, type LegacyUser } from './types.ts';

/** Legacy v1 API under the legacy base URL (paths under `/v1`): routing and record writes. */
const MAX_RECORDS_PER_POST = 100;
const PARTNER_SOURCE = 'sandbox_partner';

const isObject = (name: string | undefined): name is LegacyObject =>
  name !== undefined && (LEGACY_OBJECTS as readonly string[]).includes(name);

export async function handleLegacy(core: SandboxCore, ctx: RequestContext): Promise<void> {
  const segments = ctx.path.split('/').filter(Boolean).map(decodeURIComponent);
  if (segments[0] !== 'v1') return sendJson(ctx, 404, { code: 404, message: 'Not Found' });
  // Every path ends `.json` (optional here): strip it from the last segment.
  const parts = segments.slice(1);
  const last = parts.length - 1;
  if (last >= 0) parts[last] = (parts[last] as string).replace(/\.json$/, '');
  const body =
    ctx.method === 'POST' || ctx.method === 'PUT' || ctx.method === 'DELETE'
      ? await readJsonBody(ctx.req)
      : {};
  if (body === null)
    return sendJson(ctx, 406, { code: 406, message: 'Not Acceptable: the body must be a JSON object' });
  const token = legacyToken(ctx, body);

  if (parts[0] !== 'organizations') return shortForm(core, ctx, parts);
  const orgId = parts[1] ?? '';
  const rest = parts.slice(2);
  if (rest.length === 0 && ctx.method === 'GET') return organizationSummary(core, ctx, orgId);
  if (rest.length === 1 && rest[0] === 'users' && ctx.method === 'POST') {
    return provisionUser(core, ctx, orgId, body, token);
  }
  if (rest[0] === 'connect' && rest[1] === 'authorization' && ctx.method === 'POST') {
    return webAuthorization(core, ctx, orgId, body, token);
  }
  if (rest[0] === 'authorization' && ctx.method === 'POST' && (rest.length === 1 || rest[1] === 'new_user')) {
    return pinAuthorization(core, ctx, orgId, body, token);
  }
  // Org-level lists: /{object}.json and /{object}/latest.json
  if (
    isObject(rest[0]) &&
    ctx.method === 'GET' &&
    (rest.length === 1 || (rest.length === 2 && rest[1] === 'latest'))
  ) {
    const latest = rest.length === 2;
    if (!authorizeLegacyOrg(core, ctx, orgId, token)) return;
    return listLegacy(core, ctx, rest[0], null, latest);
  }
  if (rest[0] === 'users' && rest.length >= 3 && isObject(rest[2])) {
    const userId = rest[1] as string;
    const object = rest[2];
    const tail = rest.slice(3);
    if (!authorizeLegacyOrg(core, ctx, orgId, token)) return;
    if (!core.state.legacyUsers.has(userId))
      return sendJson(ctx, 404, { code: 404, message: 'User not found' });
    if (tail.length === 0 && ctx.method === 'GET') return listLegacy(core, ctx, object, userId, false);
    if (tail.length === 0 && ctx.method === 'POST') return createRecords(core, ctx, object, userId, body);
    if (tail.length === 1 && tail[0] === 'latest' && ctx.method === 'GET') {
      return listLegacy(core, ctx, object, userId, true);
    }
    if (tail.length === 1) {
      const record = core.state.legacyStore(object).get(tail[0] as string);
      if (!record || record.user_id !== userId)
        return sendJson(ctx, 404, { code: 404, message: 'Record not found' });
      if (ctx.method === 'GET') return singleLegacy(ctx, object, record);
      if (ctx.method === 'PUT') return updateRecordRoute(core, ctx, object, record, body);
      if (ctx.method === 'DELETE') {
        core.state.legacyStore(object).delete(record._id);
        return sendJson(ctx, 200, { code: 200, message: 'Ok' });
      }
    }
  }
  sendJson(ctx, 404, { code: 404, message: 'Not Found' });
}

/** `/v1/{object}.json` and `/v1/{object}/latest.json` with a user's `authentication_token`. */
function shortForm(core: SandboxCore, ctx: RequestContext, parts: string[]) {
  const object = parts[0];
  const latest = parts.length === 2 && parts[1] === 'latest';
  if (!isObject(object) || ctx.method !== 'GET' || !(parts.length === 1 || latest)) {
    return sendJson(ctx, 404, { code: 404, message: 'Not Found' });
  }
  const token = ctx.query.get('authentication_token') ?? ctx.query.get('access_token');
  const user = token ? core.state.legacyUserByToken(token) : undefined;
  if (!user) return sendJson(ctx, 401, { code: 401, message: 'Unauthorized' });
  listLegacy(core, ctx, object, user._id, latest);
}

function userOffset(core: SandboxCore, userId: string): string {
  const uid = core.state.legacyUsers.get(userId)?.uid ?? '';
  return formatOffset(core.offsets.get(uid) ?? 0);
}

type ItemError = { code: number; message: string; errors: string; activity_id: string | null };

const isItemError = (item: LegacyRecord | ItemError): item is ItemError => !('_id' in item);

function buildItem(
  core: SandboxCore,
  object: LegacyObject,
  userId: string,
  input: unknown,
  seen: Set<string>,
): LegacyRecord | ItemError {
  const fail = (code: number, errors: string): ItemError => ({
    code,
    message: code === 409 ? 'Conflict' : 'Unprocessable Entity',
    errors,
    activity_id:
      typeof (input as { activity_id?: unknown })?.activity_id === 'string'
        ? (input as { activity_id: string }).activity_id
        : null,
  });
  if (!input || typeof input !== 'object' || Array.isArray(input))
    return fail(422, 'record must be an object');
  const fields = input as Record<string, unknown>;
  const ts = normalizeTimestamp(fields.timestamp, fields.utc_offset, 'create', userOffset(core, userId));
  if (!ts.ok) return fail(422, ts.message);
  const activityId =
    typeof fields.activity_id === 'string' ? fields.activity_id : core.prng.hexId().slice(0, 16);
  const duplicate = [...core.state.legacyStore(object).values()].some(
    (r) => r.user_id === userId && r.activity_id === activityId,
  );
  if (duplicate || seen.has(activityId)) return fail(409, `activity_id ${activityId} already exists`);
  seen.add(activityId);
  const { _id: _ignored, access_token: _t, ...rest } = fields;
  return {
    ...rest,
    _id: core.prng.hexId(),
    user_id: userId,
    timestamp: ts.timestamp,
    utc_offset: ts.utc_offset,
    activity_id: activityId,
    source: PARTNER_SOURCE,
    source_name: sourceDisplayName(PARTNER_SOURCE),
    validated: typeof fields.validated === 'boolean' ? fields.validated : false,
    last_updated: isoSeconds(core.clock.now()),
    extras: (fields.extras as Record<string, unknown> | undefined) ?? {},
  };
}

function createRecords(
  core: SandboxCore,
  ctx: RequestContext,
  object: LegacyObject,
  userId: string,
  body: Record<string, unknown>,
) {
  const payload = body[object];
  if (payload === undefined) return sendJson(ctx, 422, { code: 422, message: `body must carry "${object}"` });
  // One record or a list of them: each built the same way; the answer's shape follows the request's.
  const many = Array.isArray(payload);
  const inputs: unknown[] = many ? payload : [payload];
  if (inputs.length > MAX_RECORDS_PER_POST) {
    return sendJson(ctx, 422, { code: 422, message: `at most ${MAX_RECORDS_PER_POST} records per request` });
  }
  const seen = new Set<string>();
  const created: LegacyRecord[] = [];
  const errors: ItemError[] = [];
  for (const input of inputs) {
    const item = buildItem(core, object, userId, input, seen);
    if (isItemError(item)) errors.push(item);
    else created.push(item);
  }
  const [error] = errors;
  if (!many && error) return sendJson(ctx, error.code === 409 ? 409 : 422, { ...error });
  storeLegacyRecords(core, object, created);
  if (!many) return sendJson(ctx, 201, { code: 201, message: 'Ok', [object]: created[0] });
  const status = created.length > 0 ? 201 : 422;
  sendJson(ctx, status, {
    code: status,
    message: created.length > 0 ? 'Ok' : 'No record was created',
    [object]: created,
    errors,
  });
}

function updateRecordRoute(
  core: SandboxCore,
  ctx: RequestContext,
  object: LegacyObject,
  record: LegacyRecord,
  body: Record<string, unknown>,
) {
  const fields = body[object];
  if (!fields || typeof fields !== 'object' || Array.isArray(fields)) {
    return sendJson(ctx, 422, {
      code: 422,
      message: `body must carry "${object}" with the fields to change`,
    });
  }
  const changes = { ...(fields as Record<string, unknown>) };
  if (changes.timestamp !== undefined) {
    // No offset conversion on PUT: the timestamp must already be UTC.
    const ts = normalizeTimestamp(
      changes.timestamp,
      changes.utc_offset ?? record.utc_offset,
      'update',
      record.utc_offset,
    );
    if (!ts.ok) return sendJson(ctx, 422, { code: 422, message: ts.message });
    changes.timestamp = ts.timestamp;
  }
  const { _id: _i, user_id: _u, source: _s, source_name: _n, last_updated: _l, ...allowed } = changes;
  const updated: LegacyRecord = { ...record, ...allowed, last_updated: isoSeconds(core.clock.now()) };
  storeLegacyRecords(core, object, [updated]);
  sendJson(ctx, 200, { code: 200, message: 'Ok', [object]: updated });
}

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
  if (latest) churnLegacyListing(core, object, all, skip + limit < linkedTotal);
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

/**
 * Legacy organization and user endpoints: verify credentials (organization summary), provision a user,
 * web authorization and mobile PIN authorization. The web-flow `signature` must be present; the sandbox
 * does not check its value (the marketplace that would sign it is outside the sandbox).
 */
const CONSUMER_NAME = 'Sandbox Consumer';

export function organizationSummary(core: SandboxCore, ctx: RequestContext, orgId: string) {
  const token = ctx.query.get('access_token');
  const legacy = core.state.legacyOrg;
  if (token !== legacy.token || orgId !== legacy.orgId) {
    return sendJson(ctx, 401, { code: 401, message: 'Unauthorized' });
  }
  let activities = 0;
  for (const store of core.state.legacyRecords.values()) activities += store.size;
  const users = [...core.state.users.values()];
  sendJson(ctx, 200, {
    summary: { status: 200, message: 'Ok', results: 1, params: {} },
    organization: {
      _id: legacy.orgId,
      name: 'Sandbox Organization',
      users: users.filter((u) => u.sources.length > 0).length,
      users_provisioned: core.state.legacyUsers.size,
      activities,
      connections: users.reduce((n, u) => n + u.sources.length, 0),
      organizations: [],
    },
  });
}

function findOrCreate(core: SandboxCore, uid: string): { user: LegacyUser; created: boolean } {
  const existing = core.state.legacyUserByUid(uid);
  if (existing) return { user: existing, created: false };
  const user = addUser(core, { uid });
  return { user: core.state.legacyUsers.get(user.id) as LegacyUser, created: true };
}

export function provisionUser(
  core: SandboxCore,
  ctx: RequestContext,
  orgId: string,
  body: Record<string, unknown>,
  token: string | null,
) {
  if (!authorizeLegacyOrg(core, ctx, orgId, token)) return;
  const uid = (body.user as { uid?: unknown } | undefined)?.uid;
  if (typeof uid !== 'string' || uid === '')
    return sendJson(ctx, 422, { code: 422, message: 'user.uid is required' });
  if (core.state.legacyUserByUid(uid) || core.state.users.has(uid)) {
    return sendJson(ctx, 409, { code: 409, message: 'User already exists' });
  }
  const { user } = findOrCreate(core, uid);
  sendJson(ctx, 201, {
    code: 201,
    message: 'Ok',
    user: { _id: user._id, uid, access_token: user.access_token },
  });
}

export function webAuthorization(
  core: SandboxCore,
  ctx: RequestContext,
  orgId: string,
  body: Record<string, unknown>,
  token: string | null,
) {
  if (!authorizeLegacyOrg(core, ctx, orgId, token)) return;
  if (typeof body.signature !== 'string' || body.signature === '') {
    return sendJson(ctx, 401, { code: 401, message: 'Invalid signature' });
  }
  if (typeof body.uid !== 'string' || body.uid === '')
    return sendJson(ctx, 422, { code: 422, message: 'uid is required' });
  const { user, created } = findOrCreate(core, body.uid);
  sendJson(ctx, created ? 201 : 200, {
    code: created ? 201 : 200,
    message: created ? 'Ok' : 'User already authorized',
    user: { _id: user._id, uid: user.uid, authentication_token: user.access_token },
    consumer_name: CONSUMER_NAME,
  });
}

export function pinAuthorization(
  core: SandboxCore,
  ctx: RequestContext,
  orgId: string,
  body: Record<string, unknown>,
  token: string | null,
) {
  const legacy = core.state.legacyOrg;
  // A failed confirmation is a 401 with code and message, for a bad token as for a bad PIN.
  if (token !== legacy.token || orgId !== legacy.orgId) {
    return sendJson(ctx, 401, { code: 401, message: 'Bad request token' });
  }
  const pin = typeof body.pin === 'string' ? body.pin : typeof body.pin === 'number' ? String(body.pin) : '';
  const issued = core.state.pins.get(pin);
  if (!/^\d{7}$/.test(pin) || !issued) return sendJson(ctx, 401, { code: 401, message: 'Invalid PIN' });
  if (core.clock.now() > issued.expiresAtMs) {
    core.state.pins.delete(pin);
    return sendJson(ctx, 401, { code: 401, message: 'PIN expired' });
  }
  const bodyUid = (body.user as { uid?: unknown } | undefined)?.uid;
  const uid = typeof bodyUid === 'string' && bodyUid !== '' ? bodyUid : issued.uid;
  if (!uid) return sendJson(ctx, 422, { code: 422, message: 'user.uid is required' });
  core.state.pins.delete(pin);
  const { user } = findOrCreate(core, uid);
  sendJson(ctx, 201, {
    code: 201,
    message: 'Ok',
    user: { _id: user._id, uid: user.uid, access_token: user.access_token },
    application: CONSUMER_NAME,
  });
}
