/**
 * The sandbox's streams API: streams created, listed and deleted, their connections, and replay.
 */

import { orgOfToken, v2Token } from './auth.ts';
import type { SandboxCore } from './core.ts';
import { type RequestContext, readJsonBody, sendJson, sendText } from './http-util.ts';
import { SseConnection } from './sse-connection.ts';
import type { LogEvent } from './state.ts';
import { DAY_MS, parseDay, startOfUtcDay } from './time.ts';
import { resourceFromName } from './types.ts';

/**
 * Streams API under the streams base URL: `POST/GET /streams`, `GET/PUT/DELETE /streams/{id}`,
 * `GET /streams/{id}/connect` (SSE) and `GET /replay`. Authenticated with the org `token` query
 * parameter; errors come as `{ "message": ... }`.
 */
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

/**
 * `GET /replay?token&date=YYYY-MM-DD[&resources=a,b]` under the streams base URL.
 *
 * Sends every logged event created on or after `date` (at most 30 days back, never before 2025-07-01)
 * in log order, then stays open: it keeps forwarding new events as they are logged and pokes when idle,
 * until the client disconnects. It never ends by itself, so a client decides it has caught up by
 * `created_at` (the provider's recipe). `resources` names resource types (singular or plural;
 * `connection` for connection events); without it every kind is replayed.
 */
const MAX_DAYS_BACK = 30;

export function handleReplay(core: SandboxCore, ctx: RequestContext) {
  const org = orgOfToken(core, v2Token(ctx));
  if (!org) return sendJson(ctx, 403, { message: 'Invalid authentication credentials' });
  const dateRaw = ctx.query.get('date');
  const dateMs = dateRaw === null ? null : parseDay(dateRaw);
  if (dateMs === null) return sendText(ctx, 400, 'Bad Request: date is required, as YYYY-MM-DD');
  const today = startOfUtcDay(core.clock.now());
  if (dateMs < today - MAX_DAYS_BACK * DAY_MS) {
    return sendText(ctx, 400, `Bad Request: replay reaches at most ${MAX_DAYS_BACK} days back`);
  }
  if (dateMs < core.settings.eventsAvailableFromMs) {
    return sendText(ctx, 400, 'Bad Request: events before 2025-07-01 are not available');
  }
  let kinds: Set<string> | null = null;
  const resources = ctx.query.get('resources');
  if (resources) {
    kinds = new Set();
    for (const name of resources.split(',').filter(Boolean)) {
      const kind = resourceFromName(name);
      if (!kind) return sendText(ctx, 400, `Bad Request: unknown resource ${name}`);
      kinds.add(kind);
    }
  }
  const log = core.state.log;
  // Only the organization with data has events; another org's token replays nothing.
  let position = org === core.state.org ? core.state.logIndexAt(dateMs) : log.length;
  const replayOlder = core.faults.current.replayOlderVersions;
  const pump = (): void => {
    if (core.faults.current.silentStream) return;
    while (position < log.length && connection.writable) {
      const event = log[position] as LogEvent;
      position++;
      if (kinds && !kinds.has(event.kind)) continue;
      connection.sendData(event.json);
      // The fault: a version older than the one just sent arrives after it.
      if (replayOlder && event.prevJson !== undefined && connection.writable)
        connection.sendData(event.prevJson);
    }
  };
  const stop = core.state.onEvent(() => pump());
  const connection = new SseConnection(core, ctx.res, {
    streamId: 'replay',
    replay: true,
    members: () => ({ count: 1, max: 1 }),
    onDrain: pump,
    onClose: stop,
  });
  core.streams.track(connection);
  pump();
}
