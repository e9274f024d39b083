/** Legacy v1 API under the legacy base URL (paths under `/v1`): routing and record writes. */
import type { SandboxCore } from './core.ts';
import { sourceDisplayName } from './generate-legacy.ts';
import { type RequestContext, readJsonBody, sendJson } from './http-util.ts';
import {
  organizationSummary,
  pinAuthorization,
  provisionUser,
  webAuthorization,
} from './legacy-account-routes.ts';
import { authorizeLegacyOrg, legacyToken } from './legacy-auth.ts';
import { listLegacy, singleLegacy } from './legacy-list.ts';
import { normalizeTimestamp } from './legacy-timestamps.ts';
import { storeLegacyRecords } from './mutations.ts';
import { formatOffset, isoSeconds } from './time.ts';
import { LEGACY_OBJECTS, type LegacyObject, type LegacyRecord } from './types.ts';

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
  const seen = new Set<string>();
  if (!Array.isArray(payload)) {
    const item = buildItem(core, object, userId, payload, seen);
    if (isItemError(item)) return sendJson(ctx, item.code === 409 ? 409 : 422, { ...item });
    storeLegacyRecords(core, object, [item]);
    return sendJson(ctx, 201, { code: 201, message: 'Ok', [object]: item });
  }
  if (payload.length > MAX_RECORDS_PER_POST) {
    return sendJson(ctx, 422, { code: 422, message: `at most ${MAX_RECORDS_PER_POST} records per request` });
  }
  const created: LegacyRecord[] = [];
  const errors: ItemError[] = [];
  for (const input of payload) {
    const item = buildItem(core, object, userId, input, seen);
    if (isItemError(item)) errors.push(item);
    else created.push(item);
  }
  storeLegacyRecords(core, object, created);
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
