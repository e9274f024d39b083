/**
 * The push-notification endpoint (v1 enterprise push), framework-free; and what a refusal of any kind
 * leaves to recover.
 */
import type { Kysely } from 'kysely';
import { toError } from '../errors/index.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { redactUrl, registerSecret } from '../redact/redact-secrets.ts';
import { secretsEqual } from '../runtime/secrets-equal.ts';
import type { LegacyObject } from '../validic/platform-limits.ts';
import type { Database } from '../warehouse/database.ts';
import {
  recordPushRefusalMinute,
  SHARED_SECRET_REFUSAL_KEY,
  storePushFetches,
} from '../warehouse/push-fetch-store.ts';
import {
  DEFAULT_PUSH_PART_ITEMS,
  type ReceivedPush,
  receivePushNotification,
  routePushItems,
} from './process-push-notification.ts';
import {
  checkSignedPush,
  createPushReplayCache,
  DEFAULT_SIGNATURE_MAX_AGE_MS,
  type PushRateLimit,
  type PushRefusalCounter,
  type PushReplayCache,
  presentedPushSecret,
  type ResolvePushOrg,
  SIGNATURE_HEADER,
  type SigningOrg,
  secretInQuery,
  TIMESTAMP_HEADER,
} from './push-admission.ts';
import { coalescedDueAt, extractPushItems, refusedMinuteFetches } from './push-items.ts';

/**
 * The push-notification endpoint (v1 enterprise push), framework-free: `handlePush`, a function of
 * {method, url, headers, body} → {status, headers, body}. The node:http adapter the worker's push
 * listener mounts at `http.pushPath` is `handlePushRequest` in src/server/push-server.ts.
 *
 * - `handlePush(request, deps)`: a function of {method, url, headers, body} → {status, headers, body};
 * - `handlePushRequest(req, res, deps)`, in `src/server/push-server.ts` (answering through
 *   `server/respond.ts`, like the admin listener): the node:http adapter (body size limit, 413) the
 *   worker's push listener mounts at `http.pushPath` (default POST /push/v1).
 *
 * Order of work, so nothing announced is ever lost and nothing unauthenticated costs more than a header
 * check: authenticate (the provider's `X-Validic-Signature`, or our shared secret in a header; 401 with
 * no reason, nothing stored, body not read); the signature's single use (a replay: 401); the per-org
 * cap (429); read the body (413 over `maxBodyBytes`, the one size limit); store it with its items as
 * pending fetches (`process-push-notification.ts`; a failure to store even the body is the only other
 * non-2xx: 503); kick the org's push.drain for when the items fall due; answer 202
 * whatever the body's shape (an unknown shape is kept with status `unrecognized`). A kick that cannot be
 * queued (Redis away) only delays the items to the drain's scheduled tick. Every refusal that may have
 * been the provider's (the cap, its signature's timestamp or a replay, 413, 503, and the listener's
 * refused or cut connections) is a refused minute, recorded and read again by a legacy latest pass
 * (`notePushRefusal`, "Refusals" in src/push/README.md).
 */
export const DEFAULT_PUSH_PATH = '/push/v1';
export const DEFAULT_PUSH_MAX_BODY_BYTES = 1024 * 1024;
/** Legacy `latest` margin around an announced `last_updated`, and lag before a refused minute. */
const DEFAULT_UPDATED_MARGIN_MS = 10 * 60_000;
/** A drain kicked for items due at T runs this long after T (the items are committed by then). */
const KICK_MARGIN_MS = 250;

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
  /**
   * Queues a job: here `push.drain` (a kick, so stored items are claimed as soon as they are due); false
   * when its deterministic id was queued already. A failure only delays the items to the drain's
   * scheduled tick.
   */
  /** Queues a push.drain kick (the worker passes its typed job queue's enqueue). */
  enqueue: (
    name: 'push.drain',
    payload: { orgId: string; due?: string },
    extra?: { delayMs?: number },
  ) => Promise<boolean> | boolean;
  resolveOrg: ResolvePushOrg;
  log?: Logger;
  /** Default 1 MiB; larger bodies get 413. */
  maxBodyBytes?: number;
  /** Items stored per transaction (default 500): a larger notification is processed in parts. */
  maxItems?: number;
  /** Notifications per org per minute (the cap that protects the service); absent = no limit. */
  rateLimit?: PushRateLimit;
  /**
   * Signatures already used: a signed push is accepted once (push-admission.ts). The worker's is in
   * Redis, shared by the fleet.
   */
  replayCache: PushReplayCache;
  /**
   * Refusals per key and minute, fleet-wide, so only the first and every 100th write their minute;
   * absent: every refusal is taken for its minute's first.
   */
  refusals?: PushRefusalCounter;
  /**
   * Items arriving within one window of this length are due together at its end (0 or absent: due at
   * once); the pending fetch of a (user, object, window) absorbs new items until it is claimed.
   */
  coalesceMs?: number;
  /**
   * Half-width of the latest window around an announced `last_updated`, and how long before a refused
   * minute its recovery window starts (default 10 minutes: the legacy overlap).
   */
  updatedMarginMs?: number;
  /**
   * Which organizations a refusal counted against `key` may have lost data of, and the legacy objects
   * to read again for them (none when legacy.sync already covers the org). Absent: nothing recovered.
   */
  refusalRecovery?: (key: string) => RefusalRecovery[];
  /**
   * "Now" for the signature's age, the refused minutes and the items' due times: the platform's clock
   * when the caller has one (the worker's clock may be off), else the process clock.
   */
  now?: () => number;
  /** When set, requests to another path get 404 (a server that routes itself can leave it out). */
  path?: string;
}

/** A JSON answer of the push endpoint. */
export const pushReply = (
  status: number,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) => ({
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

/**
 * A request that passed the gate; `orgId` when its signature told which organization sent it, and then
 * `signature` (its decoded bytes, the replay cache's key).
 */
export interface AdmittedPush {
  orgId?: string;
  signature?: Buffer;
}

/**
 * What refused a request that may have been the provider's: its org when known (the key refusals are
 * counted under, `(listener)` when not), and the kind, for the log.
 */
export type PushRefusalKind =
  | 'rate limit'
  | 'stale timestamp'
  | 'unreadable timestamp'
  | 'replayed signature'
  | 'body too large'
  | 'not stored'
  | 'connection refused'
  | 'request cut';

/**
 * Unauthenticated requests are logged sampled and bounded: per logger and reason, the first of each
 * minute (with how many were left out since the last line), its path cut short and never its query.
 * An attacker's loop writes a line a minute, not one per request.
 */
const samplers = new WeakMap<Logger, Map<string, { minute: number; suppressed: number }>>();

function sampledUnauthenticated(deps: PushDeps, request: PushRequest, reason: string): void {
  const log = deps.log ?? silentLogger;
  const minute = Math.floor((deps.now ?? Date.now)() / 60_000);
  let byReason = samplers.get(log);
  if (!byReason) {
    byReason = new Map();
    samplers.set(log, byReason);
  }
  const seen = byReason.get(reason);
  if (seen && seen.minute === minute) {
    seen.suppressed++;
    return;
  }
  byReason.set(reason, { minute, suppressed: 0 });
  const path = redactUrl(request.url.split('?')[0] ?? '').slice(0, 100);
  log.warn(
    { path, reason, suppressed: seen?.suppressed ?? 0 },
    'push request refused (401; at most one line per reason a minute)',
  );
}

/**
 * 401, with no reason for the client: an unauthenticated sender learns nothing of why (a stale
 * timestamp, a configuration). The reason goes to the sampled log.
 */
function unauthorized(deps: PushDeps, request: PushRequest, reason: string): PushResponse {
  sampledUnauthenticated(deps, request, reason);
  return pushReply(401, { error: 'unauthorized' }, { 'www-authenticate': 'X-Validic-Signature' });
}

/** A gate's refusal that may have been the provider's notification: counted as a refusal for `key`. */
interface CountedRefusal {
  response: PushResponse;
  key: string;
  kind: PushRefusalKind;
}

const isCountedRefusal = (value: PushResponse | AdmittedPush | CountedRefusal): value is CountedRefusal =>
  'kind' in value;

/** Everything decided from the request line and headers: path, method, authentication. */
function gatePushRequest(request: PushRequest, deps: PushDeps): PushResponse | AdmittedPush | CountedRefusal {
  if (deps.path !== undefined && !isPushPath(request.url, deps.path))
    return pushReply(404, { error: 'not found' });
  const signingOrgs = deps.signingOrgs ?? [];
  if (!deps.secret && signingOrgs.length === 0) {
    return pushReply(404, {
      error: 'push endpoint is disabled',
      fix: 'set VALIDIC_APPLICATION_SECRET (organizations[].applicationSecret) or PUSH_SECRET (http.pushSecret)',
    });
  }
  if (request.method !== 'POST') return pushReply(405, { error: 'method not allowed' }, { allow: 'POST' });
  registerSecret(deps.secret);
  // Refused whatever its value: proxies and access logs keep query strings (rotate a secret sent so).
  if (secretInQuery(request.url)) return unauthorized(deps, request, 'a secret in the query string');
  const signature = first(request.headers[SIGNATURE_HEADER]);
  if (signature !== undefined) {
    if (signingOrgs.length === 0)
      return unauthorized(deps, request, 'signed, but no application secret is configured');
    const check = checkSignedPush({
      signature,
      timestamp: first(request.headers[TIMESTAMP_HEADER]),
      orgs: signingOrgs,
      now: (deps.now ?? Date.now)(),
      maxAgeMs: deps.signatureMaxAgeMs ?? DEFAULT_SIGNATURE_MAX_AGE_MS,
    });
    if (check.ok) return { orgId: check.orgId, signature: check.signature };
    const response = unauthorized(deps, request, check.reason);
    // The org's own signature with a timestamp we refuse: the provider sent it, and it is lost unless
    // counted (a clock apart, or a form we cannot read).
    return 'orgId' in check ? { response, key: check.orgId, kind: check.reason } : response;
  }
  if (deps.secret && secretsEqual(deps.secret, presentedPushSecret(request.headers))) return {};
  return unauthorized(deps, request, 'no valid X-Validic-Signature or X-Validic-Sync-Secret header');
}

export const isPushResponse = (value: PushResponse | AdmittedPush): value is PushResponse =>
  'status' in value;

/**
 * The gate, then the signature's single use (401 for a replay), then the per-org rate (429). A refusal
 * that may have been the provider's is counted (`notePushRefusal`).
 */
export async function admitPushRequest(
  request: PushRequest,
  deps: PushDeps,
): Promise<PushResponse | AdmittedPush> {
  const gate = gatePushRequest(request, deps);
  if (isCountedRefusal(gate)) {
    await notePushRefusal(deps, gate.key, gate.kind);
    return gate.response;
  }
  if (isPushResponse(gate)) return gate;
  // A shared-secret push names its org only in its items: count it against the only org, if one.
  const key = refusalKeyOf(deps, gate);
  if (gate.signature && !(await claimSignature(deps, gate.signature, gate.orgId!))) {
    const response = unauthorized(deps, request, 'replayed signature');
    await notePushRefusal(deps, key, 'replayed signature');
    return response;
  }
  if (!deps.rateLimit) return gate;
  let take: { allowed: boolean };
  try {
    take = await deps.rateLimit.take(key);
  } catch (error) {
    // Redis away: let the notification in (it is stored, and its fetches wait in PostgreSQL) rather
    // than lose it.
    (deps.log ?? silentLogger).warn({ err: error, org: key }, 'push rate could not be counted; admitted');
    take = { allowed: true };
  }
  if (take.allowed) return gate;
  await notePushRefusal(deps, key, 'rate limit');
  return pushReply(
    429,
    {
      error: `more push notifications for ${key} this minute than push.ratePerMinute allows`,
      fix: 'raise PUSH_RATE_PER_MINUTE if this volume is expected; this minute is read again by a legacy latest pass (legacy.sync, or a push fetch of mode refused)',
    },
    { 'retry-after': '60' },
  );
}

/**
 * A signature's first use, or false for a replay. Kept for twice the maximum age: a timestamp is
 * accepted from `maxAge` before to `maxAge` after our clock. Should the shared cache not answer (Redis
 * away), the process's own cache decides: a replay to this process is still refused, and the push is
 * not lost.
 */
async function claimSignature(deps: PushDeps, signature: Buffer, orgId: string): Promise<boolean> {
  const ttlMs = 2 * (deps.signatureMaxAgeMs ?? DEFAULT_SIGNATURE_MAX_AGE_MS);
  try {
    return await deps.replayCache.claim(signature, ttlMs);
  } catch (error) {
    (deps.log ?? silentLogger).warn(
      { err: error, org: orgId },
      "push signature's single use could not be checked fleet-wide; checked in this process",
    );
    return fallbackReplayCache(deps).claim(signature, ttlMs);
  }
}

const fallbackCaches = new WeakMap<PushDeps, PushReplayCache>();
function fallbackReplayCache(deps: PushDeps): PushReplayCache {
  let cache = fallbackCaches.get(deps);
  if (!cache) {
    cache = createPushReplayCache({ ...(deps.now ? { now: deps.now } : {}) });
    fallbackCaches.set(deps, cache);
  }
  return cache;
}

/**
 * A refused request that may have been the provider's notification is lost unless something reads what
 * it announced (nothing says the provider retries), whatever refused it: the per-minute cap, a
 * timestamp refused against our clock, a replayed signature (the provider may have sent two bodies under
 * one timestamp), a body over the limit, a body that could not be stored, or a connection the listener
 * refused or cut (`key` LISTENER_REFUSAL_KEY, src/warehouse/push-fetch-store.ts: every org). The first refusal of a key's minute (and every
 * 100th, counted fleet-wide) records the minute and queues its legacy latest windows; those refusals are
 * logged at warn, the others at debug.
 */
export async function notePushRefusal(deps: PushDeps, key: string, kind: PushRefusalKind): Promise<void> {
  const log = deps.log ?? silentLogger;
  const refused = deps.refusals ? await deps.refusals.count(key) : 1;
  if (!refusalToRecord(refused)) {
    log.debug({ org: key, refused, kind }, 'push request refused');
    return;
  }
  const now = (deps.now ?? Date.now)();
  const recoveries = deps.refusalRecovery?.(key) ?? [];
  log.warn(
    { org: key, refused, kind, recover: recoveries.map((r) => `${r.orgId}:${r.objects.length}`) },
    'push requests refused: they may be lost; the minute is read again by a legacy latest pass',
  );
  try {
    const written = await recordPushRefusal(deps.db, {
      key,
      now,
      refused,
      recoveries,
      lagMs: deps.updatedMarginMs ?? DEFAULT_UPDATED_MARGIN_MS,
      coalesceMs: deps.coalesceMs ?? 0,
    });
    if (written > 0 && refused === 1) {
      const due = Math.floor(now / 60_000) * 60_000 + 60_000 + (deps.coalesceMs ?? 0);
      await kickDrains(deps, [...new Set(recoveries.map((r) => r.orgId))], due, now);
    }
  } catch (error) {
    log.error(
      { err: error, org: key },
      'could not record a refused push minute; the next refusal tries again',
    );
  }
}

/**
 * Kicks each org's push.drain for `due`, rounded up to the second: one job per org and second (the job
 * id holds `due`), so a burst of notifications queues one drain, not one each.
 */
async function kickDrains(
  deps: PushDeps,
  orgIds: readonly string[],
  dueAt: number,
  now: number,
): Promise<void> {
  const due = Math.ceil(dueAt / 1000) * 1000;
  for (const orgId of orgIds) {
    try {
      await deps.enqueue(
        'push.drain',
        { orgId, due: new Date(due).toISOString() },
        { delayMs: Math.max(0, due - now) + KICK_MARGIN_MS },
      );
    } catch (error) {
      (deps.log ?? silentLogger).warn(
        { err: error, org: orgId },
        'could not kick the push drain; the stored fetches wait for its scheduled tick',
      );
    }
  }
}

export async function handlePush(
  request: PushRequest,
  deps: PushDeps,
  admitted?: AdmittedPush,
): Promise<PushResponse> {
  const admission = admitted ?? (await admitPushRequest(request, deps));
  if (isPushResponse(admission)) return admission;
  const log = deps.log ?? silentLogger;
  const raw = request.body ?? '';
  const max = deps.maxBodyBytes ?? DEFAULT_PUSH_MAX_BODY_BYTES;
  if (Buffer.byteLength(raw, 'utf8') > max) return refusedTooLarge(deps, admission, max);

  let parsed: unknown;
  let parseError: string | undefined;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    parseError = `body is not JSON: ${toError(error).message}`;
  }
  const { items, problems } =
    parseError === undefined ? extractPushItems(parsed) : { items: [], problems: [parseError] };

  const now = (deps.now ?? Date.now)();
  const coalesceMs = deps.coalesceMs ?? 0;
  const routing = routePushItems(items, admission.orgId, deps.resolveOrg);
  let received: ReceivedPush;
  try {
    // The body is stored with (normally in the same transaction as) its items; the org when the
    // signature told it, so a cut-off processing can be resumed by that org's drain.
    received = await receivePushNotification(
      deps.db,
      { raw, parsed, contentType: first(request.headers['content-type']), orgId: admission.orgId ?? null },
      { routed: routing.routed, problems: [...problems, ...routing.problems], signedBy: admission.orgId },
      {
        now,
        coalesceMs,
        updatedMarginMs: deps.updatedMarginMs ?? DEFAULT_UPDATED_MARGIN_MS,
        partItems: deps.maxItems ?? DEFAULT_PUSH_PART_ITEMS,
      },
    );
  } catch (error) {
    log.error({ err: error }, 'could not store a push notification');
    // Not stored: a retry of the same signature is not a replay, and the minute is counted as refused.
    if (admission.signature) await deps.replayCache.release(admission.signature).catch(() => {});
    await notePushRefusal(deps, refusalKeyOf(deps, admission), 'not stored');
    return pushReply(503, { error: 'could not store the notification, retry later' }, { 'retry-after': '5' });
  }
  const { id, processed } = received;
  if (!processed) {
    // The body is stored with its progress: push.drain resumes it (status stays `received`).
    log.error(
      { err: received.error, notification: id },
      'push notification stored, its items not yet; push.drain resumes it',
    );
    return pushReply(202, { accepted: true, id: String(id), status: 'received', items: items.length });
  }
  await kickDrains(deps, processed.orgs, coalescedDueAt(now, coalesceMs), now);
  log.info(
    { notification: id, status: processed.status, items: items.length, enqueued: processed.stored },
    'push notification received',
  );
  return pushReply(202, {
    accepted: true,
    id: String(id),
    status: processed.status,
    items: items.length,
    enqueued: processed.stored,
  });
}

/** The key an admitted push's refusals count under: its org, else the only org, else the shared secret's. */
const refusalKeyOf = (deps: PushDeps, admitted: AdmittedPush) =>
  admitted.orgId ?? deps.resolveOrg(undefined) ?? SHARED_SECRET_REFUSAL_KEY;

/** The 413 of an admitted push whose body is over `max` bytes, counted as a refusal of its org. */
export async function refusedTooLarge(
  deps: PushDeps,
  admitted: AdmittedPush,
  max: number,
): Promise<PushResponse> {
  await notePushRefusal(deps, refusalKeyOf(deps, admitted), 'body too large');
  return pushTooLarge(max);
}

/** The 413 of a body over `max` bytes (the listener answers it before reading on). */
export function pushTooLarge(max: number): PushResponse {
  return pushReply(
    413,
    {
      error: `body larger than ${max} bytes: nothing was stored`,
      fix: 'raise http.maxBodyBytes if the provider sends notifications this large; until then what they announce reaches the warehouse only if legacy.sync runs for the org (legacy.enabled)',
    },
    { connection: 'close' },
  );
}

/**
 * A minute with refusals (any that may have been the provider's push: `notePushRefusal`): recorded in
 * `validic_sync.push_refusals`, and covered by org-level legacy `latest` windows queued as push fetches
 * (mode `refused`), since a refused notification is lost unless something reads what it announced.
 *
 * A refused minute (see "Refusals"): written at the first refusal of the minute and every 100th (the
 * count in `validic_sync.push_refusals` only grows, so it may be up to 99 short; a write per refusal would
 * cost the database exactly what the cap protects), with the minute's latest windows in the same
 * transaction. A later write merges into the same pending windows without counting them again, and
 * repairs a first write that failed.
 */

/** Which orgs a refusal counted against `key` may have lost data of, and the objects to re-read. */
export interface RefusalRecovery {
  orgId: string;
  /** Empty when legacy.sync already reads the org's latest windows (legacy.enabled). */
  objects: readonly LegacyObject[];
}

/** Refusals after the first of a minute are written only every this many (one row update each). */
export const REFUSALS_PER_WRITE = 100;

/** Whether the `refused`-th refusal of a minute is one to write (the first, then every 100th). */
export const refusalToRecord = (refused: number) => refused === 1 || refused % REFUSALS_PER_WRITE === 0;

/**
 * Records the minute (its count only grows) and queues its recovery windows, in one transaction.
 * Returns the recovery fetches written.
 */
export async function recordPushRefusal(
  db: Kysely<Database>,
  input: {
    key: string;
    now: number;
    /** Refusals so far this minute, fleet-wide. */
    refused: number;
    recoveries: readonly RefusalRecovery[];
    /** Records are updated before they are announced: each window starts this long before the minute. */
    lagMs: number;
    coalesceMs: number;
  },
): Promise<number> {
  const minuteStart = Math.floor(input.now / 60_000) * 60_000;
  return db.transaction().execute(async (trx) => {
    await recordPushRefusalMinute(trx, input.key, new Date(minuteStart), input.refused);
    // A later write of the same minute (the 100th refusal) merges into the same pending rows, counting
    // no new item; it repairs a first write that failed.
    const items = input.refused === 1 ? 1 : 0;
    const fetches = input.recoveries.flatMap((r) =>
      refusedMinuteFetches({
        orgId: r.orgId,
        objects: r.objects,
        minuteStart,
        lagMs: input.lagMs,
        coalesceMs: input.coalesceMs,
      }).map((f) => ({ ...f, items })),
    );
    return storePushFetches(trx, fetches, { now: input.now });
  });
}
