/**
 * The push-notification endpoint (v1 enterprise push), framework-free: `handlePush`, a function of
 * {method, url, headers, body} → {status, headers, body}, and `handlePushRequest`, the node:http adapter
 * the worker's push listener mounts at `http.pushPath`.
 * Why and how: README.md, "`handle-push.ts`".
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Kysely } from 'kysely';
import { toError } from '../errors/index.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { redactUrl, registerSecret } from '../redact/redact-secrets.ts';
import { secretsEqual } from '../runtime/secrets-equal.ts';
import type { Database } from '../warehouse/database.ts';
import { extractPushItems, type PushItem } from './push-items.ts';
import {
  markPushNotification,
  type PushNotificationStatus,
  storePushNotification,
} from './push-notification-store.ts';
import type { PushRateLimit } from './push-rate-limit.ts';
import { presentedPushSecret, secretInQuery } from './push-secret.ts';
import {
  checkSignedPush,
  DEFAULT_SIGNATURE_MAX_AGE_MS,
  SIGNATURE_HEADER,
  type SigningOrg,
  TIMESTAMP_HEADER,
} from './push-signature.ts';
import type { ResolvePushOrg } from './resolve-push-org.ts';

export const DEFAULT_PUSH_PATH = '/push/v1';
export const DEFAULT_PUSH_MAX_BODY_BYTES = 1024 * 1024;
export const DEFAULT_PUSH_MAX_ITEMS = 500;

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
  /** `http.pushSecret` (`PUSH_SECRET`), accepted in a header only. */
  secret: string | undefined;
  /**
   * Organizations with an application secret: a push signed by one of them belongs to it. With neither
   * these nor `secret`, the endpoint answers 404 (push is off).
   */
  signingOrgs?: readonly SigningOrg[];
  /** Largest age (either way) of a signed push's timestamp (default 5 minutes). */
  signatureMaxAgeMs?: number;
  db: Kysely<Database>;
  /** Queues a job (`legacy.fetch`); false when its deterministic id was queued already. */
  enqueue: (name: string, payload: unknown, extra?: { delayMs?: number }) => Promise<boolean> | boolean;
  resolveOrg: ResolvePushOrg;
  log?: Logger;
  /** Default 1 MiB; larger bodies get 413. */
  maxBodyBytes?: number;
  /** Items one notification may hold (default 500); more get 413. */
  maxItems?: number;
  /** Notifications per org per minute; absent = no limit. */
  rateLimit?: PushRateLimit;
  /**
   * Repeats of one (user, object, activity date, source) within this window become one job, delayed to
   * the window's end (0 or absent: one job while it is queued, no delay).
   */
  coalesceMs?: number;
  /** Clock (tests). */
  now?: () => number;
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

/** A request that passed the gate; `orgId` when its signature told which organization sent it. */
export interface AdmittedPush {
  orgId?: string;
}

function unauthorized(deps: PushDeps, request: PushRequest, reason: string, fix?: string): PushResponse {
  (deps.log ?? silentLogger).warn({ url: redactUrl(request.url), reason }, 'push request refused');
  return reply(
    401,
    { error: 'unauthorized', reason, ...(fix ? { fix } : {}) },
    { 'www-authenticate': 'X-Validic-Signature' },
  );
}

/** Everything decided from the request line and headers: path, method, authentication. */
export function gatePushRequest(request: PushRequest, deps: PushDeps): PushResponse | AdmittedPush {
  if (deps.path !== undefined && !isPushPath(request.url, deps.path))
    return reply(404, { error: 'not found' });
  const signingOrgs = deps.signingOrgs ?? [];
  if (!deps.secret && signingOrgs.length === 0) {
    return reply(404, {
      error: 'push endpoint is disabled',
      fix: 'set VALIDIC_APPLICATION_SECRET (organizations[].applicationSecret) or PUSH_SECRET (http.pushSecret)',
    });
  }
  if (request.method !== 'POST') return reply(405, { error: 'method not allowed' }, { allow: 'POST' });
  registerSecret(deps.secret);
  if (secretInQuery(request.url)) {
    // Refused whatever its value: proxies and access logs keep query strings.
    return unauthorized(
      deps,
      request,
      'a secret in the query string is never accepted',
      'send PUSH_SECRET in the X-Validic-Sync-Secret header, and rotate it: it may sit in a proxy log now',
    );
  }
  const signature = first(request.headers[SIGNATURE_HEADER]);
  if (signature !== undefined) {
    if (signingOrgs.length === 0) {
      return unauthorized(
        deps,
        request,
        'signed push, but no application secret is configured',
        'set VALIDIC_APPLICATION_SECRET (organizations[].applicationSecret)',
      );
    }
    const check = checkSignedPush({
      signature,
      timestamp: first(request.headers[TIMESTAMP_HEADER]),
      orgs: signingOrgs,
      now: (deps.now ?? Date.now)(),
      maxAgeMs: deps.signatureMaxAgeMs ?? DEFAULT_SIGNATURE_MAX_AGE_MS,
    });
    if (!check.ok) return unauthorized(deps, request, check.reason);
    return { orgId: check.orgId };
  }
  if (deps.secret && secretsEqual(deps.secret, presentedPushSecret(request.headers))) return {};
  return unauthorized(deps, request, 'no valid X-Validic-Signature or X-Validic-Sync-Secret header');
}

const isResponse = (value: PushResponse | AdmittedPush): value is PushResponse => 'status' in value;

/** The gate, then the per-org rate (429). */
export async function admitPushRequest(
  request: PushRequest,
  deps: PushDeps,
): Promise<PushResponse | AdmittedPush> {
  const gate = gatePushRequest(request, deps);
  if (isResponse(gate) || !deps.rateLimit) return gate;
  // A shared-secret push names its org only in its items: count it against the only org, if one.
  const key = gate.orgId ?? deps.resolveOrg(undefined) ?? '(shared secret)';
  let allowed: boolean;
  try {
    allowed = await deps.rateLimit.take(key);
  } catch (error) {
    // Redis away: let the notification in (it is stored, and its jobs wait for Redis) rather than lose it.
    (deps.log ?? silentLogger).warn({ err: error, org: key }, 'push rate could not be counted; admitted');
    allowed = true;
  }
  if (allowed) return gate;
  (deps.log ?? silentLogger).warn({ org: key }, 'push notifications over the per-minute rate');
  return reply(
    429,
    {
      error: `more push notifications for ${key} this minute than push.ratePerMinute allows`,
      fix: 'retry after the minute; raise PUSH_RATE_PER_MINUTE if this volume is expected',
    },
    { 'retry-after': '60' },
  );
}

/** The job a recognized item becomes (payload and queueing options). */
function fetchJob(
  item: PushItem,
  orgId: string,
  notificationId: number,
  coalesceMs: number,
  now: number,
): { payload: Record<string, unknown>; extra?: { delayMs: number } } {
  const { organizationId: _ignored, ...target } = item;
  const payload: Record<string, unknown> = { orgId, ...target, notificationId: String(notificationId) };
  if (!item.activityDate || coalesceMs <= 0) return { payload };
  // Repeats within one window share the job id; the job runs when the window closes, so it reads
  // whatever every repeat announced.
  const window = Math.floor(now / coalesceMs);
  payload.window = String(window);
  return { payload, extra: { delayMs: (window + 1) * coalesceMs - now } };
}

export async function handlePush(
  request: PushRequest,
  deps: PushDeps,
  admitted?: AdmittedPush,
): Promise<PushResponse> {
  const admission = admitted ?? (await admitPushRequest(request, deps));
  if (isResponse(admission)) return admission;
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
  const { items, problems, listed } =
    parseError === undefined ? extractPushItems(parsed) : { items: [], problems: [parseError], listed: 0 };
  const maxItems = deps.maxItems ?? DEFAULT_PUSH_MAX_ITEMS;
  if (listed > maxItems) {
    log.warn({ items: listed, maxItems }, 'push notification with more items than allowed');
    return reply(
      413,
      {
        error: `the notification holds ${listed} items, more than push.maxItems (${maxItems})`,
        fix: 'raise PUSH_MAX_ITEMS if notifications this large are expected; legacy.sync still loads the records',
      },
      { connection: 'close' },
    );
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

  const now = (deps.now ?? Date.now)();
  let enqueued = 0;
  let routed = 0;
  let enqueueError: string | undefined;
  const orgs = new Set<string>();
  for (const item of items) {
    // A signature names the org for every item; otherwise the item (or the only org) does.
    const orgId = admission.orgId ?? deps.resolveOrg(item.organizationId);
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
    const job = fetchJob(item, orgId, id, deps.coalesceMs ?? 0, now);
    try {
      if (await deps.enqueue('legacy.fetch', job.payload, job.extra)) enqueued++;
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
  const orgId = admission.orgId ?? (orgs.size === 1 ? [...orgs][0]! : null);
  try {
    await markPushNotification(deps.db, id, { status, orgId, items: items.length, enqueued, error });
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
  const admission = await admitPushRequest(request, deps);
  if (isResponse(admission)) {
    // The body of a rejected request is never read: drop it with the connection.
    admission.headers.connection = 'close';
    return send(res, admission);
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
  send(res, await handlePush({ ...request, body: body.toString('utf8') }, deps, admission));
}
