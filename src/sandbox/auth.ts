/**
 * Who may call the sandbox's APIs: the v2 token of an organization (401 for another's) and the v1
 * (legacy) organization and user access tokens.
 */
import type { SandboxCore } from './core.ts';
import { type RequestContext, sendJson } from './http-util.ts';
import type { Organization } from './state.ts';

/**
 * v2 authentication: the org token as the `token` query parameter (`api_key` accepted as an alias,
 * since the formal definition names it). Unknown token → 403; a valid token of another org → 401.
 */
export function v2Token(ctx: RequestContext): string | null {
  return ctx.query.get('token') ?? ctx.query.get('api_key');
}

/** The organization a v2 token belongs to, if any. */
export function orgOfToken(core: SandboxCore, token: string | null): Organization | undefined {
  return [core.state.org, core.state.otherOrg].find((o) => o.token === token);
}

/** The organization of the request's token, or null after answering 403/401. */
export function authorizeV2(
  core: SandboxCore,
  ctx: RequestContext,
  orgId: string | null,
): Organization | null {
  const org = orgOfToken(core, v2Token(ctx));
  if (!org) {
    sendJson(ctx, 403, { message: 'Invalid authentication credentials' });
    return null;
  }
  if (orgId !== null && org.orgId !== orgId) {
    sendJson(ctx, 401, { errors: ['token not authorized to access the organization'] });
    return null;
  }
  return org;
}

/**
 * Legacy (v1) credentials: the organization access token (`access_token`, query for reads, body for
 * writes) or a user's token (`authentication_token`) on the short forms. Unknown token → 401; a token
 * of another organization → 403.
 */
export function legacyToken(ctx: RequestContext, body: Record<string, unknown> | null): string | null {
  const fromBody = body?.access_token;
  return ctx.query.get('access_token') ?? (typeof fromBody === 'string' ? fromBody : null);
}

/** True when the token belongs to the legacy org and the path names it; otherwise answers 401/403. */
export function authorizeLegacyOrg(
  core: SandboxCore,
  ctx: RequestContext,
  orgId: string,
  token: string | null,
): boolean {
  const legacy = core.state.legacyOrg;
  if (token === legacy.token) {
    if (orgId === legacy.orgId) return true;
    sendJson(ctx, 403, {
      code: 403,
      message: 'Forbidden: the access token does not belong to this organization',
    });
    return false;
  }
  if (token !== null && (token === core.state.org.token || token === core.state.otherOrg.token)) {
    sendJson(ctx, 403, { code: 403, message: 'Forbidden: wrong access token supplied' });
    return false;
  }
  sendJson(ctx, 401, { code: 401, message: 'Unauthorized' });
  return false;
}
