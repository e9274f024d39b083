/**
 * The push-notification endpoint (v1 enterprise push), framework-free:
 * - `handlePush(request, deps)`: a function of {method, url, headers, body} → {status, headers, body};
 * - `handlePushRequest(req, res, deps)`: the node:http adapter (body size limit, 413) the worker's HTTP
 *   server mounts at `http.pushPath` (default POST /push/v1).
 *
 * Order of work, so nothing announced is ever lost: check the secret (401, nothing stored); store the raw
 * body (a failure here is the only non-2xx after auth: 503, so the sender retries); then interpret it and
 * queue one legacy.fetch job per recognized item; answer 202 whatever the body's shape (an unknown shape
 * is kept with status `unrecognized`). A queueing failure is recorded on the row (`failed`) and still
 * answered 202: the body is stored, and the scheduled legacy.sync catches the records anyway.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Kysely } from 'kysely';
import { redactUrl, registerSecret } from '../config/redact.ts';
import { toError } from '../errors.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import type { Database } from '../warehouse/database.ts';
import { extractPushItems } from './push-items.ts';
import {
  markPushNotification,
  type PushNotificationStatus,
  storePushNotification,
} from './push-notification-store.ts';
import { presentedPushSecret, pushSecretMatches } from './push-secret.ts';
import type { ResolvePushOrg } from './resolve-push-org.ts';

export const DEFAULT_PUSH_PATH = '/push/v1';
export const DEFAULT_PUSH_MAX_BODY_BYTES = 1024 * 1024;

type Headers = Record<string, string | string[] | undefined>;

export interface PushRequest {
  method: string;
  /** Request target (path and query), as node:http gives it. */
  url: string;
  headers: Headers;
  /** The body as text (absent in the pre-body gate). */
  body?: string;
}

export interface PushResponse {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface PushDeps {
  /** `http.pushSecret`; without it the endpoint answers 404 (push is off). */
  secret: string | undefined;
  db: Kysely<Database>;
  /** Queues a job (`legacy.fetch`); false when its deterministic id was queued already. */
  enqueue: (name: string, payload: unknown) => Promise<boolean> | boolean;
  resolveOrg: ResolvePushOrg;
  log?: Logger;
  /** Default 1 MiB; larger bodies get 413. */
  maxBodyBytes?: number;
  /** When set, requests to another path get 404 (a server that routes itself can leave it out). */
  path?: string;
}

const reply = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
  body,
});

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** Whether `url` (path and query) addresses `path`, ignoring a trailing slash. */
export function isPushPath(url: string, path: string = DEFAULT_PUSH_PATH): boolean {
  let pathname: string;
  try {
    pathname = new URL(url, 'http://relative.invalid/').pathname;
  } catch {
    return false;
  }
  const trim = (p: string) => p.replace(/\/+$/, '') || '/';
  return trim(pathname) === trim(path);
}

/** Everything decided before the body is read: path, method, secret. Undefined: go on. */
export function gatePushRequest(request: PushRequest, deps: PushDeps): PushResponse | undefined {
  if (deps.path !== undefined && !isPushPath(request.url, deps.path))
    return reply(404, { error: 'not found' });
  if (!deps.secret) {
    return reply(404, { error: 'push endpoint is disabled', fix: 'set PUSH_SECRET (http.pushSecret)' });
  }
  if (request.method !== 'POST') return reply(405, { error: 'method not allowed' }, { allow: 'POST' });
  registerSecret(deps.secret);
  if (!pushSecretMatches(deps.secret, presentedPushSecret(request.headers, request.url))) {
    (deps.log ?? silentLogger).warn(
      { url: redactUrl(request.url) },
      'push request without the right secret (X-Validic-Sync-Secret header or ?secret=)',
    );
    return reply(401, { error: 'unauthorized' }, { 'www-authenticate': 'X-Validic-Sync-Secret' });
  }
  return undefined;
}

export async function handlePush(request: PushRequest, deps: PushDeps): Promise<PushResponse> {
  const gate = gatePushRequest(request, deps);
  if (gate) return gate;
  const log = deps.log ?? silentLogger;
  const raw = request.body ?? '';
  const max = deps.maxBodyBytes ?? DEFAULT_PUSH_MAX_BODY_BYTES;
  if (Buffer.byteLength(raw, 'utf8') > max) return tooLarge(max);

  let parsed: unknown;
  let parseError: string | undefined;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    parseError = `body is not JSON: ${toError(error).message}`;
  }

  let id: number;
  try {
    id = await storePushNotification(deps.db, {
      raw,
      parsed,
      contentType: first(request.headers['content-type']),
    });
  } catch (error) {
    log.error({ err: error }, 'could not store a push notification');
    return reply(503, { error: 'could not store the notification, retry later' }, { 'retry-after': '5' });
  }

  const { items, problems } =
    parseError === undefined ? extractPushItems(parsed) : { items: [], problems: [parseError] };
  let enqueued = 0;
  let routed = 0;
  let enqueueError: string | undefined;
  const orgs = new Set<string>();
  for (const item of items) {
    const orgId = deps.resolveOrg(item.organizationId);
    if (!orgId) {
      problems.push(
        item.organizationId
          ? `organization ${item.organizationId} is not configured`
          : 'the item names no organization and several are configured',
      );
      continue;
    }
    routed++;
    orgs.add(orgId);
    const { organizationId: _ignored, ...target } = item;
    try {
      if (await deps.enqueue('legacy.fetch', { orgId, ...target, notificationId: String(id) })) enqueued++;
    } catch (error) {
      enqueueError ??= `queueing failed: ${toError(error).message}`;
    }
  }

  const status: Exclude<PushNotificationStatus, 'received'> = enqueueError
    ? 'failed'
    : routed === 0
      ? 'unrecognized'
      : problems.length > 0
        ? 'partial'
        : 'queued';
  const error = [enqueueError, ...problems].filter(Boolean).join('; ') || null;
  try {
    await markPushNotification(deps.db, id, {
      status,
      orgId: orgs.size === 1 ? [...orgs][0]! : null,
      items: items.length,
      enqueued,
      error,
    });
  } catch (markError) {
    // The body is stored; only its bookkeeping is behind. Not worth a retry by the sender.
    log.error({ err: markError, notification: id }, 'could not record the outcome of a push notification');
  }
  log.info({ notification: id, status, items: items.length, enqueued }, 'push notification received');
  return reply(202, { accepted: true, id: String(id), status, items: items.length, enqueued });
}

function tooLarge(max: number): PushResponse {
  return reply(413, { error: `body larger than ${max} bytes` }, { connection: 'close' });
}

function send(res: ServerResponse, response: PushResponse): void {
  const body = JSON.stringify(response.body);
  res.writeHead(response.status, { ...response.headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** Reads the body up to `max` bytes; undefined when it is larger (reading stops there). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        cleanup();
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** node:http adapter: mount it at `http.pushPath` (POST). */
export async function handlePushRequest(
  req: IncomingMessage,
  res: ServerResponse,
  deps: PushDeps,
): Promise<void> {
  const request: PushRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers };
  const gate = gatePushRequest(request, deps);
  if (gate) {
    // The body of a rejected request is never read: drop it with the connection.
    gate.headers.connection = 'close';
    return send(res, gate);
  }
  const max = deps.maxBodyBytes ?? DEFAULT_PUSH_MAX_BODY_BYTES;
  const declared = Number(first(req.headers['content-length']));
  if (Number.isFinite(declared) && declared > max) return send(res, tooLarge(max));
  let body: Buffer | undefined;
  try {
    body = await readBody(req, max);
  } catch (error) {
    (deps.log ?? silentLogger).warn({ err: error }, 'push request body could not be read');
    if (!res.headersSent) send(res, reply(400, { error: 'body could not be read' }, { connection: 'close' }));
    return;
  }
  if (body === undefined) return send(res, tooLarge(max));
  send(res, await handlePush({ ...request, body: body.toString('utf8') }, deps));
}
