/**
 * Legacy organization and user endpoints: verify credentials (organization summary), provision a user,
 * web authorization and mobile PIN authorization. The web-flow `signature` must be present; the sandbox
 * does not check its value (the marketplace that would sign it is outside the sandbox).
 */
import type { SandboxCore } from './core.ts';
import { type RequestContext, sendJson } from './http-util.ts';
import { authorizeLegacyOrg } from './legacy-auth.ts';
import { addUser } from './mutations.ts';
import type { LegacyUser } from './types.ts';

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
