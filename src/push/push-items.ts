/**
 * What a push notification announces: its items, read from every body shape the provider documents,
 * and the fetch each item asks for as a row of the durable queue (validic_sync.push_fetches).
 */
import {
  LEGACY_OBJECTS,
  type LegacyObject,
  MAX_PATH_ID_LENGTH,
  pathSegmentProblem,
  RETRIEVABLE_HISTORY_DAYS,
} from '../validic/platform-limits.ts';
import type { PushFetchInput } from '../warehouse/push-fetch-store.ts';

/**
 * What a push notification announces.
 *
 * What a push notification announces. The provider documents the body (docs/platform.md, "Enterprise
 * push notifications"):
 *
 * ```text
 * { "data": [ { "_id": <user>, "activity_type": <object>,
 *               "activity_date": <measurement set's timestamp>, "source": <app> } ] }
 * ```
 *
 * where `_id` is the USER (v1 `_id`), not a record: an item with `activity_type` is read that way and
 * becomes a targeted retrieval of that user's object around `activity_date`, filtered by `source`.
 * Partner-side notifications (`{ "data": { "type": "sync" | "disconnect", … } }`) announce no data: they
 * are kept (stored) and reported, never an error.
 *
 * The shapes accepted before the provider's was known still are, so that other senders keep working:
 *
 * - items in `notifications`, `data`, `items`, `activities` or `records` (an array, or one object), a
 *   bare array of items, or one bare item;
 * - per item: the object in `object`/`type`/`object_type`/`resource`; the record in `_id`/`id`/
 *   `record_id`; the user in `user_id`/`user._id`/`userId`; `last_updated`/`updated_at`; the org in
 *   `organization_id`/`org_id`; and a retrieval `url`/`path`/`href`/`uri` (absolute or relative) whose
 *   path `…/organizations/{org}/users/{user}/{object}/{id}.json` fills whatever the fields leave out.
 *
 * Every shape gets the same item checks: an item whose record or user id cannot be a URL path segment
 * (`..`, control characters; see src/validic/platform-limits.ts), or whose source or organization holds
 * control characters or is absurdly long, is left out with the reason among the problems, and the
 * notification's other items are kept. Pure: no I/O.
 */
export interface PushItem {
  object: LegacyObject;
  recordId?: string;
  userId?: string;
  /** ISO instant (UTC). */
  lastUpdated?: string;
  /** Legacy organization id, when the item says. */
  organizationId?: string;
  /** The documented item's `activity_date` (ISO instant, UTC): the measurement set's timestamp. */
  activityDate?: string;
  /** The documented item's `source` (the app's short name). */
  source?: string;
}

export interface ExtractedPushItems {
  items: PushItem[];
  /** Why items (or the whole body) were not understood. */
  problems: string[];
  /** Entries the body lists (before repeats and unreadable ones are dropped): what `maxItems` bounds. */
  listed: number;
}

const LIST_KEYS = ['notifications', 'data', 'items', 'activities', 'records'] as const;

type Obj = Record<string, unknown>;
const isObject = (value: unknown): value is Obj =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function text(...values: unknown[]): string | undefined {
  for (const value of values) {
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

/** A legacy object name, tolerating case, a `.json` suffix and a missing plural `s`. */
export function toKnownLegacyObject(name: string | undefined): LegacyObject | undefined {
  if (!name) return undefined;
  const cleaned = name
    .trim()
    .toLowerCase()
    .replace(/\.json$/, '');
  const known = LEGACY_OBJECTS as readonly string[];
  if (known.includes(cleaned)) return cleaned as LegacyObject;
  if (known.includes(`${cleaned}s`)) return `${cleaned}s` as LegacyObject;
  return undefined;
}

export interface RetrievalPath {
  organizationId?: string;
  userId?: string;
  object?: string;
  recordId?: string;
}

/** Reads org, user, object and record out of a v1 retrieval URL or path; {} when it is none. */
export function parseRetrievalPath(link: string | undefined): RetrievalPath {
  if (!link) return {};
  let url: URL;
  try {
    url = new URL(link, 'http://relative.invalid/');
  } catch {
    return {};
  }
  let segments: string[];
  try {
    segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return {};
  }
  const out: RetrievalPath = {};
  let rest: string[];
  const orgAt = segments.indexOf('organizations');
  if (orgAt >= 0) {
    out.organizationId = segments[orgAt + 1]?.replace(/\.json$/, '');
    rest = segments.slice(orgAt + 2);
  } else {
    const v1At = segments.indexOf('v1');
    rest = v1At >= 0 ? segments.slice(v1At + 1) : segments;
  }
  if (rest[0] === 'users') {
    out.userId = rest[1];
    rest = rest.slice(2);
  }
  const object = rest[0]?.replace(/\.json$/, '');
  if (object) out.object = object;
  const id = rest[1]?.replace(/\.json$/, '');
  if (id && id !== 'latest') out.recordId = id;
  return out;
}

function instant(value: unknown): string | undefined {
  const raw = text(value);
  if (!raw) return undefined;
  const ms = Date.parse(raw);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

const PARTNER_TYPES = new Set(['sync', 'disconnect']);

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why a kept text (a source, an organization id) is unusable: control characters, absurd length. */
function textProblem(value: string): string | undefined {
  if (CONTROL.test(value)) return 'holds control characters';
  if (value.length > MAX_PATH_ID_LENGTH) return `is longer than ${MAX_PATH_ID_LENGTH} characters`;
  return undefined;
}

/**
 * The checks every item gets, whatever its shape: ids that go into a retrieval URL's path must be path
 * segments (an id such as `..` would address another endpoint), and nothing kept may hold control
 * characters (PostgreSQL text refuses NUL: one such item would fail the whole notification's storage).
 * The reason quotes the value JSON-escaped and cut short.
 */
function itemProblem(
  index: number,
  fields: { recordId?: string; userId?: string; source?: string; organizationId?: string },
): string | undefined {
  const checks = [
    ['record id', fields.recordId, pathSegmentProblem, 'cannot be used in a URL path: it'],
    ['user id', fields.userId, pathSegmentProblem, 'cannot be used in a URL path: it'],
    ['source', fields.source, textProblem, ''],
    ['organization id', fields.organizationId, textProblem, ''],
  ] as const;
  for (const [name, value, check, prefix] of checks) {
    const problem = value === undefined ? undefined : check(value);
    if (problem)
      return `item ${index}: the ${name} ${JSON.stringify(value!.slice(0, 80))} ${prefix ? `${prefix} ` : ''}${problem}`;
  }
  return undefined;
}

/** The provider's documented item: `_id` is the user; retrieval by activity date and source. */
function parseDocumentedItem(value: Obj, index: number): PushItem | string {
  const named = text(value.activity_type);
  const object = toKnownLegacyObject(named);
  if (!object)
    return `item ${index}: activity_type ${JSON.stringify(named?.slice(0, 80))} is not a legacy object`;
  const item: PushItem = { object };
  const userId = text(value._id, value.user_id);
  const activityDate = instant(value.activity_date);
  const source = text(value.source);
  const organizationId = text(value.organization_id, value.organizationId, value.org_id);
  const problem = itemProblem(index, { userId, source, organizationId });
  if (problem) return problem;
  if (userId) item.userId = userId;
  if (activityDate) item.activityDate = activityDate;
  else if (value.activity_date !== undefined) return `item ${index}: activity_date is not a timestamp`;
  if (source) item.source = source;
  if (organizationId) item.organizationId = organizationId;
  return item;
}

function parseItem(value: unknown, index: number): PushItem | string {
  if (!isObject(value)) return `item ${index} is not an object`;
  if ('activity_type' in value) return parseDocumentedItem(value, index);
  const partnerType = text(value.type)?.toLowerCase();
  if (partnerType && PARTNER_TYPES.has(partnerType) && isObject(value.user)) {
    return `item ${index}: a partner-side ${partnerType} notification (kept; it announces no data to fetch)`;
  }
  const link = text(value.url, value.path, value.href, value.uri, value.resource_url);
  const fromPath = parseRetrievalPath(link);
  const user = isObject(value.user) ? value.user : {};
  const named = text(value.object, value.type, value.object_type, value.resource);
  const object = toKnownLegacyObject(named) ?? toKnownLegacyObject(fromPath.object);
  if (!object) {
    return `item ${index}: no legacy object (${named ? `${JSON.stringify(named.slice(0, 80))} is not one` : 'no object/type field or retrieval url'})`;
  }
  const item: PushItem = { object };
  const recordId = text(value._id, value.id, value.record_id, value.recordId) ?? fromPath.recordId;
  const userId = text(value.user_id, value.userId, user._id, user.id) ?? fromPath.userId;
  const lastUpdated = instant(value.last_updated ?? value.lastUpdated ?? value.updated_at);
  const organizationId =
    text(value.organization_id, value.organizationId, value.org_id) ?? fromPath.organizationId;
  const problem = itemProblem(index, { recordId, userId, organizationId });
  if (problem) return problem;
  if (recordId) item.recordId = recordId;
  if (userId) item.userId = userId;
  if (lastUpdated) item.lastUpdated = lastUpdated;
  if (organizationId) item.organizationId = organizationId;
  return item;
}

function candidates(body: unknown): unknown[] | undefined {
  if (Array.isArray(body)) return body;
  if (!isObject(body)) return undefined;
  for (const key of LIST_KEYS) {
    const value = body[key];
    if (Array.isArray(value)) return value;
    if (isObject(value)) return [value];
  }
  const looksLikeItem = ['object', 'type', '_id', 'url', 'path', 'activity_type'].some((key) => key in body);
  return looksLikeItem ? [body] : undefined;
}

export function extractPushItems(body: unknown): ExtractedPushItems {
  const list = candidates(body);
  if (!list) {
    return {
      items: [],
      listed: 0,
      problems: [`no notification items found (expected ${LIST_KEYS.join('/')} or an array)`],
    };
  }
  const items: PushItem[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  list.forEach((value, index) => {
    const item = parseItem(value, index);
    if (typeof item === 'string') {
      problems.push(item);
      return;
    }
    const key = [
      item.object,
      item.recordId,
      item.userId,
      item.lastUpdated,
      item.organizationId,
      item.activityDate,
      item.source,
    ].join('\u0001');
    if (seen.has(key)) return;
    seen.add(key);
    items.push(item);
  });
  if (list.length === 0) problems.push('the notification holds no items');
  return { items, problems, listed: list.length };
}

/**
 * What fetch a push item asks for, as a row of the durable queue (validic_sync.push_fetches), and how
 * rows with the same key merge (pure).
 *
 * What fetch an item asks for (pure), as a row of the durable queue: `activity` (the documented item: the
 * user's object list around its `activity_date`), `record` (a record and its user), `updated` (a latest
 * window around `last_updated`, one fetch per UTC hour of it, so a window stays about an hour long), and
 * `refused` (an org-level latest window over refused minutes). The key is (org, object, mode, user,
 * record, bucket); `mergePushFetch` is the rule the store's upsert applies when an item joins a pending
 * row: the range widens, sources unite (null, any source, absorbs the rest), items add up, and it stays
 * due at the earlier time, except a `refused` window, which waits for the end of its latest minute. Due
 * times lie on a grid of `push.coalesceSeconds` (`coalescedDueAt`), so the items of one window are due
 * together and one kick of the drain serves them all.
 *
 * What a fetch may cost is bounded here, whatever the item says. An announced `activity_date` or
 * `last_updated` is clamped to what the platform serves, from RETRIEVABLE_HISTORY_DAYS ago to the
 * present, with a day of slack either way for clocks (a device's bad clock, or ours): a date in 1990 or
 * 2100 reads the oldest or the newest window, never decades. And an `activity` fetch covers one window of
 * ACTIVITY_BUCKET_MS (its bucket): with the day either side that the retrieval adds, that is one list
 * request of at most ACTIVITY_SPAN_MS, so items of a user and object on dates far apart are separate
 * fetches, each claimed within push's share of the budget, instead of one fetch whose range spans them
 * all.
 */
export interface PushFetchTiming {
  /** Arrival time of the notification. */
  now: number;
  /** `push.coalesceSeconds` in ms: items of one window of this length are due together, at its end. */
  coalesceMs: number;
  /** Half-width of the latest window around an announced `last_updated` (the legacy overlap, ≥ 1 minute). */
  updatedMarginMs: number;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const hourOf = (ms: number) => iso(ms).slice(0, 13);

/**
 * Half-width of an activity fetch's window around its announced dates: one day covers every UTC offset
 * (−12…+14 h) of a date written as the user's local time (jobs/legacy-fetch.ts).
 */
export const ACTIVITY_MARGIN_MS = DAY_MS;

/**
 * Longest activity-date range one list request asks for. The provider documents no limit for the v1
 * list endpoints; this is the v2 API's 30 days, the documented limit nearest to them.
 */
export const ACTIVITY_SPAN_MS = 30 * DAY_MS;

/**
 * Width of an activity fetch's bucket: with the margin either side, one bucket's fetch spans at most
 * ACTIVITY_SPAN_MS, one list request. Buckets are aligned to the epoch.
 */
export const ACTIVITY_BUCKET_MS = ACTIVITY_SPAN_MS - 2 * ACTIVITY_MARGIN_MS;

/** Slack either way when clamping an announced date to what the platform serves (clocks disagree). */
export const ANNOUNCED_DATE_SLACK_MS = DAY_MS;

/** An announced instant clamped to what the platform serves as of `now`: the last year, to the present. */
export function clampAnnouncedDate(ms: number, now: number): number {
  const oldest = now - RETRIEVABLE_HISTORY_DAYS * DAY_MS - ANNOUNCED_DATE_SLACK_MS;
  const newest = now + ANNOUNCED_DATE_SLACK_MS;
  return Math.min(Math.max(ms, oldest), newest);
}

/** The bucket of an (already clamped) activity date: the UTC date its window starts on. */
export function activityBucketOf(ms: number): string {
  return iso(Math.floor(ms / ACTIVITY_BUCKET_MS) * ACTIVITY_BUCKET_MS).slice(0, 10);
}

/** The list requests an activity fetch over [start, end] makes: one per ACTIVITY_SPAN_MS of its window. */
export function activityRequests(start: number, end: number): number {
  return Math.max(1, Math.ceil((end - start + 2 * ACTIVITY_MARGIN_MS) / ACTIVITY_SPAN_MS));
}

/** End of the coalescing window `now` falls in (now itself without a window). */
export function coalescedDueAt(now: number, coalesceMs: number): number {
  return coalesceMs > 0 ? (Math.floor(now / coalesceMs) + 1) * coalesceMs : now;
}

export function pushFetchOfItem(item: PushItem, orgId: string, timing: PushFetchTiming): PushFetchInput {
  const base = {
    orgId,
    object: item.object,
    userId: item.userId ?? '',
    recordId: '',
    bucket: '',
    sources: null,
    items: 1,
    dueAt: iso(coalescedDueAt(timing.now, timing.coalesceMs)),
  };
  // An announced time, clamped to what the platform can mean: its bucket and the range around it.
  const around = (
    announced: string,
    mode: 'activity' | 'updated',
    bucketOf: (ms: number) => string,
    marginMs: number,
    sources: string[] | null,
  ): PushFetchInput => {
    const at = clampAnnouncedDate(Date.parse(announced), timing.now);
    return {
      ...base,
      mode,
      bucket: bucketOf(at),
      rangeStart: iso(at - marginMs),
      rangeEnd: iso(at + marginMs),
      sources,
    };
  };
  if (item.activityDate) {
    return around(item.activityDate, 'activity', activityBucketOf, 0, item.source ? [item.source] : null);
  }
  if (item.recordId && item.userId) {
    return { ...base, mode: 'record', recordId: item.recordId, rangeStart: null, rangeEnd: null };
  }
  if (item.lastUpdated) return around(item.lastUpdated, 'updated', hourOf, timing.updatedMarginMs, null);
  return { ...base, mode: 'updated', rangeStart: null, rangeEnd: null };
}

/**
 * The fetches that cover a minute whose notifications were refused: one org-level latest window per
 * object, from `lagMs` before the minute (records are updated before they are announced) to its end,
 * due once the minute is over.
 */
export function refusedMinuteFetches(input: {
  orgId: string;
  objects: readonly LegacyObject[];
  minuteStart: number;
  lagMs: number;
  coalesceMs: number;
}): PushFetchInput[] {
  const end = input.minuteStart + MINUTE_MS;
  return input.objects.map((object) => ({
    orgId: input.orgId,
    object,
    mode: 'refused',
    userId: '',
    recordId: '',
    bucket: hourOf(input.minuteStart),
    rangeStart: iso(input.minuteStart - input.lagMs),
    rangeEnd: iso(end),
    sources: null,
    items: 1,
    dueAt: iso(end + input.coalesceMs),
  }));
}
