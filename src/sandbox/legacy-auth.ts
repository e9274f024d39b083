/**
 * Legacy (v1) credentials: the organization access token (`access_token`, query for reads, body for
 * writes) or a user's token (`authentication_token`) on the short forms. Unknown token → 401; a token
 * of another organization → 403.
 */
import type { SandboxCore } from './core.ts';
import { type RequestContext, sendJson } from './http-util.ts';

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
