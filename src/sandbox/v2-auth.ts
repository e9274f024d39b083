/**
 * v2 authentication: the org token as the `token` query parameter (`api_key` accepted as an alias,
 * since the formal definition names it). Unknown token → 403; a valid token of another org → 401.
 */
import type { SandboxCore } from './core.ts';
import { type RequestContext, sendJson } from './http-util.ts';
import type { Organization } from './state.ts';

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
