/**
 * Streams API under the streams base URL: `POST/GET /streams`, `GET/PUT/DELETE /streams/{id}`,
 * `GET /streams/{id}/connect` (SSE) and `GET /replay`. Authenticated with the org `token` query
 * parameter; errors come as `{ "message": ... }`.
 */
import type { SandboxCore } from './core.ts';
import { type RequestContext, readJsonBody, sendJson } from './http-util.ts';
import { handleReplay } from './replay.ts';
import { orgOfToken, v2Token } from './v2-auth.ts';

export async function handleStreams(core: SandboxCore, ctx: RequestContext): Promise<void> {
  const parts = ctx.path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'replay' && parts.length === 1 && ctx.method === 'GET') return handleReplay(core, ctx);
  if (parts[0] !== 'streams' || parts.length > 3) {
    return sendJson(ctx, 404, { message: 'Not Found' });
  }
  const org = orgOfToken(core, v2Token(ctx));
  if (!org) {
    return sendJson(ctx, 403, { message: 'Invalid authentication credentials' });
  }
  const owner = org.orgId;
  const hub = core.streams;
  if (parts.length === 1) {
    if (ctx.method === 'GET') return sendJson(ctx, 200, { streams: hub.list(owner) });
    if (ctx.method === 'POST') {
      const body = await readJsonBody(ctx.req);
      if (!body) return sendJson(ctx, 400, { message: 'Body must be a JSON object' });
      const stream = (body.stream as Record<string, unknown> | undefined) ?? body;
      const created = hub.create(owner, stream);
      if ('status' in created) return sendJson(ctx, created.status, { message: created.message });
      return sendJson(ctx, 201, created);
    }
    return sendJson(ctx, 405, { message: 'Method Not Allowed' });
  }
  const id = parts[1] as string;
  if (parts.length === 3) {
    if (parts[2] !== 'connect' || ctx.method !== 'GET') return sendJson(ctx, 404, { message: 'Not Found' });
    const outcome = hub.connect(owner, id, ctx.res);
    if (!outcome.ok) sendJson(ctx, outcome.status, { message: outcome.message });
    return;
  }
  if (ctx.method === 'GET') {
    const stream = hub.get(owner, id);
    return stream ? sendJson(ctx, 200, stream) : sendJson(ctx, 404, { message: 'Stream not found' });
  }
  if (ctx.method === 'PUT') {
    const body = await readJsonBody(ctx.req);
    const fields = (body?.stream as Record<string, unknown> | undefined) ?? body;
    if (typeof fields?.name !== 'string' || fields.name === '') {
      return sendJson(ctx, 422, { message: 'name is required' });
    }
    const stream = hub.rename(owner, id, fields.name);
    return stream ? sendJson(ctx, 200, stream) : sendJson(ctx, 404, { message: 'Stream not found' });
  }
  if (ctx.method === 'DELETE') {
    const removed = hub.remove(owner, id);
    if (!removed) return sendJson(ctx, 404, { message: 'Stream not found' });
    if ('status' in removed) return sendJson(ctx, removed.status, { message: removed.message });
    return sendJson(ctx, 200, removed);
  }
  sendJson(ctx, 405, { message: 'Method Not Allowed' });
}
