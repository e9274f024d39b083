/**
 * The v1 (legacy) API's client: its URLs, the summary pager that follows `summary.next` as the server
 * writes it and holds a listing against `summary.results`, and one record read by id.
 */

import type { OrganizationConfig } from '../config/schema.ts';
import { httpStatusOf, IncompleteListingError } from '../errors/index.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import type { PlatformClock } from '../time/platform-clock.ts';
import type { LegacyObject } from '../validic/platform-limits.ts';
import {
  buildUrl,
  LISTING_REREADS,
  listItems,
  numberField,
  parseEnvelope,
  type QueryValue,
  type RawObject,
  rawObject,
} from '../validic/requests.ts';

/**
 * Typed client of the legacy (v1) API: `{legacyUrl}/v1/organizations/{orgId}/...json`, authenticated
 * with `?access_token=`, always `expanded=1` (so `activity_id` and `extras` come along), and the
 * `Service-Version` header when the organization is pinned to a version.
 *
 * Lists come as `{ summary: {...}, <object>: [...] }` and are paged by `pageBySummary`, which follows
 * `summary.next` and throws IncompleteListingError after the last page it could read when the listing
 * falls short of `summary.results`.
 */
export interface LegacyClientOptions {
  http: HttpClient;
  /** e.g. https://api.validic.com (every path is put under `/v1`). */
  legacyUrl: string;
  orgId: string;
  accessToken: string;
  /** `Service-Version` header value (YYYY-MM-DD) when the organization is pinned to a version. */
  serviceVersion?: string;
  /** Page size asked for (default 1000; the server may cap it, e.g. at 200 on latest). */
  pageLimit?: number;
  /** The platform's clock: a `latest` listing sees records stamped while it is paged (`SummaryPagerOptions.stamp`). */
  platformClock?: Pick<PlatformClock, 'earliestAt'>;
}

export interface LegacyRange {
  /** Instant (Date or ISO string); sent as YYYY-MM-DDThh:mm:ssZ. */
  startDate: Date | string;
  endDate: Date | string;
  /** Optional source filter (comma-separated). */
  source?: string;
  signal?: AbortSignal;
}

export interface LegacyClient {
  /** GET /v1/organizations/{org}.json: the organization summary (also verifies the credentials). */
  getOrganization(options?: { signal?: AbortSignal }): Promise<RawObject>;
  /** Organization-level list of an object, by activity date. */
  pageOrgList(object: LegacyObject, range: LegacyRange): AsyncIterable<SummaryPage>;
  /** User-level list (`userId` is the service user `_id`). */
  pageUserList(userId: string, object: LegacyObject, range: LegacyRange): AsyncIterable<SummaryPage>;
  /** Organization-level latest: records recorded or updated in the range (by `last_updated`). */
  pageLatest(object: LegacyObject, range: LegacyRange): AsyncIterable<SummaryPage>;
  /** User-level latest. */
  pageUserLatest(userId: string, object: LegacyObject, range: LegacyRange): AsyncIterable<SummaryPage>;
}

export function createLegacyClient(options: LegacyClientOptions): LegacyClient {
  const { http, legacyUrl, orgId, accessToken } = options;
  const limit = options.pageLimit ?? 1000;
  const headers: Record<string, string> = options.serviceVersion
    ? { 'service-version': options.serviceVersion }
    : {};
  const url = (segments: string[], query: Record<string, QueryValue> = {}) =>
    buildUrl(legacyUrl, ['v1', 'organizations', orgId, ...segments], { ...query, access_token: accessToken });

  const pages = (
    segments: string[],
    object: LegacyObject,
    range: LegacyRange,
  ): AsyncIterable<SummaryPage> => {
    const firstUrl = url(segments, {
      start_date: formatLegacyInstant(range.startDate),
      end_date: formatLegacyInstant(range.endDate),
      expanded: 1,
      source: range.source,
    });
    const what = `GET /v1 ${object} list`;
    const listed = `${segments.includes('latest.json') ? 'latest ' : ''}${object} ${formatLegacyInstant(range.startDate)}..${formatLegacyInstant(range.endDate)}`;
    const clock = options.platformClock;
    return pageBySummary({
      firstUrl,
      limit,
      signal: range.signal,
      ...(clock && segments.includes('latest.json')
        ? { stamp: { field: 'last_updated', platformTimeAt: (ms: number) => clock.earliestAt(ms) } }
        : {}),
      what: `the legacy ${listed}${segments[0] === 'users' ? ` of user ${segments[1]}` : ''}`,
      fetchPage: async (pageUrl, signal) => {
        const body = await http.getJson<unknown>(pageUrl, { signal, headers, budgetKey: accessToken });
        const { items, rejected } = listItems(body, object, what);
        const summary = rawObject.safeParse((body as RawObject | null)?.summary);
        return { items, rejected, summary: summary.success ? summary.data : {} };
      },
    });
  };

  return {
    async getOrganization({ signal } = {}) {
      const orgUrl = buildUrl(legacyUrl, ['v1', 'organizations', `${orgId}.json`], {
        access_token: accessToken,
      });
      const body = await http.getJson<unknown>(orgUrl, {
        signal,
        headers,
        budgetKey: accessToken,
      });
      return parseEnvelope(rawObject, body, 'GET /v1/organizations/{id}.json');
    },
    pageOrgList: (object, range) => pages([`${object}.json`], object, range),
    pageUserList: (userId, object, range) => pages(['users', userId, `${object}.json`], object, range),
    pageLatest: (object, range) => pages([object, 'latest.json'], object, range),
    pageUserLatest: (userId, object, range) => pages(['users', userId, object, 'latest.json'], object, range),
  };
}

/** YYYY-MM-DDThh:mm:ssZ, one of the two forms the legacy API accepts (milliseconds are dropped). */
export function formatLegacyInstant(value: Date | string): string {
  const date = typeof value === 'string' ? new Date(value) : value;
  if (Number.isNaN(date.getTime())) throw new RangeError(`invalid instant ${String(value)}`);
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A copy of `url` with some query parameters set (the original is left alone). */
export function buildUrlFrom(url: URL, params: Record<string, string | number | undefined>): URL {
  const copy = new URL(url);
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) copy.searchParams.delete(name);
    else copy.searchParams.set(name, String(value));
  }
  return copy;
}

/**
 * Pages a legacy (v1) list by following its `summary.next` links as the server writes them, and proves
 * the listing complete against `summary.results`, or throws IncompleteListingError once the pages read
 * are yielded. It never loops.
 *
 * Pages a legacy (v1) list by following `summary.next` as the server writes it, and proves the listing
 * complete against `summary.results`; it never loops and never stops without saying why.
 *
 * Servers page in more than one way: by `offset` (records to skip), by `page` alone (ignoring `offset`,
 * as the provider's own `page=` links suggest), or by both together (links carrying both). A pager that
 * builds its own `offset` reads the first page again and again from a `page` server, and one that reads
 * a link's `offset` and ignores its `page` stops after one page of a server that sends both. So:
 * - the first page is asked with our `limit` (offset 0); every later page with the paging of the previous
 *   page's `next` link exactly (`page` and `offset` as the link has them, its `limit` if it has one), on
 *   our own host, path, filters and credentials: a link's host, path, filters or token are never used (a
 *   response must not be able to send our token elsewhere or change what we ask for);
 * - an offset-only link past where the records of an offset-only page ended (a link built from the
 *   `limit` asked when the server applied less, e.g. the 200 cap of the latest endpoints) is asked from
 *   where the records ended instead;
 * - without a usable link (no `next` key, or no `page`/`offset` in it) the next page is the one after this
 *   one, in the way this one was asked.
 *
 * The listing ends, complete unless `summary.results` says more records exist than the distinct records
 * read, when: the records read reach `summary.results`; `next` is null; `next` goes back to the first page
 * (`page` 1 / `offset` 0: the wrap-around of one description); a page comes back empty. It is incomplete
 * (IncompleteListingError, thrown after every page read was yielded, so the loader keeps them) when:
 * fewer records than `summary.results` were read at such an end; a page holds only records already read
 * (a server ignoring our paging); `next` points at a page already asked (other than the first);
 * `maxPages` is reached. Records are counted by `_id` (else their JSON), so a record met twice because the
 * list shifted while it was read counts once, and the record the shift skipped shows as missing.
 */

export interface SummaryPage {
  /** Records of the page, as received. */
  items: RawObject[];
  /** Elements of the page that were not objects (for quarantine); they still count as records read. */
  rejected: unknown[];
  /** The page's `summary` block ({} when absent). */
  summary: RawObject;
  /** The paging parameters this page was asked with (`page`, `offset`, `limit`; those not sent are absent). */
  request: PagingParams;
  /**
   * Which read of the listing the page belongs to: 0, then 1, 2… when the listing changed while it was
   * paged and is read again from its first page (what an earlier read listed proves nothing then).
   */
  pass: number;
}

export interface PagingParams {
  page?: number;
  offset?: number;
  limit?: number;
}

export type FetchSummaryPage = (
  url: URL,
  signal?: AbortSignal,
) => Promise<{ items: RawObject[]; rejected?: unknown[]; summary: RawObject }>;

export interface SummaryPagerOptions {
  /** URL of the list without paging parameters (or with a start `offset`). */
  firstUrl: URL;
  /** Page size asked for on the first page (the server may apply less; its links then say so). */
  limit: number;
  fetchPage: FetchSummaryPage;
  signal?: AbortSignal;
  /** Safety stop (default 100,000 pages); reaching it is an incomplete listing. */
  maxPages?: number;
  /** Names the list in errors, e.g. `GET /v1 fitness latest 2026-01-01T00:00:00Z..2026-01-02T00:00:00Z`. */
  what?: string;
  /** Reads from the start of a listing that changed while paged, before giving up (default `LISTING_REREADS`). */
  maxRereads?: number;
  /**
   * For a listing by an update stamp (`latest`, by `last_updated`): the stamp's field, and the platform's
   * time at the earliest it can have been when the worker's clock read a time (src/time/platform-clock.ts).
   * A record stamped since a read's first page was asked, on a later page, that no earlier read listed came
   * in while the listing was paged; with a record gone meanwhile the count holds, and one record shifted
   * past the read point: the listing is read again.
   */
  stamp?: { field: string; platformTimeAt(workerMs: number): number };
}

/** Query parameters that carry a credential: never taken from a link, always our own. */
const CREDENTIALS = new Set(['access_token', 'authentication_token', 'token']);
const PAGING = ['page', 'offset', 'limit'] as const;

export async function* pageBySummary(options: SummaryPagerOptions): AsyncGenerator<SummaryPage> {
  const { firstUrl, fetchPage, signal } = options;
  const maxPages = options.maxPages ?? 100_000;
  const maxRereads = options.maxRereads ?? LISTING_REREADS;
  const what = options.what ?? 'a legacy list';
  // The first page: our limit, from the start offset (0 unless the caller gave one).
  const start = ownQuery(firstUrl);
  start.set('offset', String(Math.max(0, Number(start.get('offset') ?? 0) || 0)));
  start.delete('page');
  start.set('limit', String(options.limit));

  let pages = 0;
  /** Records an earlier read listed: they were there before a later read began, whatever their stamp. */
  const listedBefore = new Set<string>();
  for (let pass = 0; ; pass++) {
    const moved = yield* readListingOnce(start, pass);
    if (moved === undefined) return;
    if (pass >= maxRereads) {
      throw new IncompleteListingError(
        what,
        `the listing changed while it was paged, ${pass + 1} reads in a row (${moved.detail})`,
        moved,
      );
    }
  }

  /**
   * One read of the listing from its first page. Returns undefined when it ended complete, or what showed
   * that the listing changed while it was paged (the caller reads it again from the start).
   */
  async function* readListingOnce(
    first: URLSearchParams,
    pass: number,
  ): AsyncGenerator<SummaryPage, ListingMoved | undefined> {
    let query = new URLSearchParams(first);
    const requested = new Set<string>();
    /** Keys of every record read (its `_id`, else its JSON), to count distinct records and see repeats. */
    const read = new Set<string>();
    /** `summary.results` as the first page of this read gave it: a later page giving another is a change. */
    let results: number | undefined;
    const incomplete = (detail: string) =>
      new IncompleteListingError(what, detail, { listed: read.size, total: results });
    /** The listing ended: complete unless the server's own count says records are missing or extra. */
    const changed = (detail: string): ListingMoved => {
      for (const key of read) listedBefore.add(key);
      return { detail, listed: read.size, total: results };
    };
    const ended = (how: string): ListingMoved | undefined => {
      if (results !== undefined && read.size < results)
        throw incomplete(`summary.results ${results}; ${how}`);
      // More distinct records than the listing holds: one came in and another went out while it was paged,
      // and the offsets shifted under what was left to read.
      if (results !== undefined && read.size > results)
        return changed(`${read.size} distinct records read of summary.results ${results}`);
      return undefined;
    };

    /** The platform's time (whole seconds, at the earliest) when this read's first page was asked. */
    let since: number | undefined;
    for (let page = 0; ; pages++, page++) {
      if (pages >= maxPages) throw incomplete(`stopped after ${maxPages} pages`);
      requested.add(requestKey(query));
      const url = withQuery(firstUrl, query);
      const sentAt = Date.now();
      const { items, rejected = [], summary } = await fetchPage(url, signal);
      // Read after the answer, whose Date the platform clock has just been told.
      if (options.stamp) since ??= Math.floor(options.stamp.platformTimeAt(sentAt) / 1000) * 1000;
      const pageResults = numberField(summary, 'results');
      const elements: unknown[] = [...items, ...rejected];
      let fresh = 0;
      for (const element of elements) {
        const key = recordKey(element);
        if (!read.has(key)) {
          read.add(key);
          fresh++;
        }
      }
      // Every record of the page was read before: the server ignores how we page, or went back. Its
      // count alone could prove the listing complete, and it does not (that would have ended it already).
      if (elements.length > 0 && fresh === 0) throw incomplete('a page repeated records already read');
      if (elements.length > 0) yield { items, rejected, summary, request: pagingOf(query), pass };

      // Signs that the listing moved under the pager: its count changed, or a page repeats part of what
      // was read (records before the page's offset were added, and the rest shifted back).
      if (results !== undefined && pageResults !== undefined && pageResults !== results)
        return changed(`summary.results went from ${results} to ${pageResults}`);
      if (fresh < elements.length)
        return changed(`a page repeated ${elements.length - fresh} records already read`);
      const field = options.stamp?.field;
      const newcomer =
        field && since !== undefined && page > 0
          ? items.find((item) => {
              const stamped =
                typeof item[field] === 'string' ? Date.parse(item[field] as string) : Number.NaN;
              return stamped >= since! && !listedBefore.has(recordKey(item));
            })
          : undefined;
      if (newcomer) return changed(`record ${String(newcomer._id)} was stamped after the listing began`);
      results ??= pageResults;

      if (elements.length === 0) return ended('a page came back empty');
      if (results !== undefined && read.size >= results) return ended('every record counted was read');
      const next = summary.next;
      if (next === null) return ended('summary.next was null');
      const link = typeof next === 'string' && next.trim() !== '' ? linkQuery(next, url, query) : undefined;
      if (link === 'start') return ended('summary.next went back to the first page');
      if (link) {
        if (requested.has(requestKey(link))) throw incomplete('summary.next pointed at a page already read');
        query = repairJump(link, query, elements.length);
      } else {
        // No usable link: continue the way this page was asked, right after the records it holds.
        query = new URLSearchParams(query);
        const page = query.get('page');
        if (page !== null && !query.has('offset')) query.set('page', String(Number(page) + 1));
        else query.set('offset', String(Number(query.get('offset') ?? 0) + elements.length));
      }
    }
  }
}

/** What showed that a listing changed while it was paged, and how far that read had got. */
interface ListingMoved {
  detail: string;
  listed: number;
  total: number | undefined;
}

/** The query of the next request, from a `next` link: 'start' for a link back to the first page. */
function linkQuery(link: string, current: URL, ours: URLSearchParams): URLSearchParams | 'start' | undefined {
  let target: URL;
  try {
    target = new URL(link, current);
  } catch {
    return undefined;
  }
  const params = target.searchParams;
  if (!params.has('page') && !params.has('offset')) return undefined;
  const offset = Number(params.get('offset') ?? 0);
  const page = Number(params.get('page') ?? 1);
  if (!Number.isFinite(offset) || !Number.isFinite(page)) return undefined;
  if (offset <= 0 && page <= 1) return 'start';
  // Our filters (dates, expanded, source); the paging exactly as the link has it (our limit if it has none).
  const query = new URLSearchParams(ours);
  for (const name of PAGING) {
    const value = params.get(name);
    if (value !== null) query.set(name, value);
    else if (name !== 'limit') query.delete(name);
  }
  return query;
}

/**
 * An offset-only `next` past the records this offset-only page ended at would skip records (a link built
 * from the limit asked, not the one the server applied): ask from where the records ended instead.
 */
function repairJump(link: URLSearchParams, current: URLSearchParams, count: number): URLSearchParams {
  if (link.has('page') || current.has('page')) return link;
  const end = Number(current.get('offset') ?? 0) + count;
  if (Number(link.get('offset')) <= end) return link;
  const repaired = new URLSearchParams(link);
  repaired.set('offset', String(end));
  return repaired;
}

/** The URL's query without credentials. */
function ownQuery(url: URL): URLSearchParams {
  const query = new URLSearchParams();
  for (const [name, value] of url.searchParams) if (!CREDENTIALS.has(name)) query.set(name, value);
  return query;
}

/** `base` (its origin, path and credentials) with `query` for everything else. */
function withQuery(base: URL, query: URLSearchParams): URL {
  const url = new URL(base);
  for (const name of [...url.searchParams.keys()]) if (!CREDENTIALS.has(name)) url.searchParams.delete(name);
  for (const [name, value] of query) url.searchParams.set(name, value);
  return url;
}

/** Identity of a request for loop detection: its query, sorted (credentials are never in it). */
function requestKey(query: URLSearchParams): string {
  const sorted = new URLSearchParams(query);
  sorted.sort();
  return sorted.toString();
}

function pagingOf(query: URLSearchParams): PagingParams {
  const paging: PagingParams = {};
  for (const name of PAGING) {
    const value = query.get(name);
    if (value !== null && Number.isFinite(Number(value))) paging[name] = Number(value);
  }
  return paging;
}

function recordKey(element: unknown): string {
  const id = (element as { _id?: unknown } | null)?._id;
  return typeof id === 'string' ? `id:${id}` : `json:${JSON.stringify(element)}`;
}

/**
 * One legacy record by id: GET /v1/organizations/{org}/users/{user}/{object}/{id}.json, answered as
 * `{ summary, <object>: [record] }`. The legacy client pages lists only, so this targeted read (what a
 * push notification announces) is built here from the same parts: the org's HTTP client (budget,
 * retries, redaction), its legacy base URL, org id, token and `Service-Version`.
 *
 * The URL is always built from configuration, never taken from a notification: a push body must not be
 * able to send our access token to a host of its choosing.
 */

export interface GetLegacyRecordInput {
  userId: string;
  object: string;
  recordId: string;
  signal?: AbortSignal;
}

/**
 * One legacy record by id, telling a 404 apart (`found: false`): the record is gone from the platform
 * (deleted, or its user is), which is what marks a stored row deleted (see confirm-legacy-deletes.ts).
 */
export async function findLegacyRecord(
  org: { config: OrganizationConfig; http: HttpClient },
  input: GetLegacyRecordInput,
): Promise<{ found: true; items: RawObject[] } | { found: false }> {
  const config = org.config;
  const accessToken = config.legacyToken ?? config.token;
  const url = buildUrl(
    config.legacyUrl,
    [
      'v1',
      'organizations',
      config.legacyOrgId ?? config.orgId,
      'users',
      input.userId,
      input.object,
      `${input.recordId}.json`,
    ],
    { access_token: accessToken, expanded: 1 },
  );
  const headers: Record<string, string> = config.legacy.serviceVersion
    ? { 'service-version': config.legacy.serviceVersion }
    : {};
  let body: unknown;
  try {
    body = await org.http.getJson<unknown>(url, {
      headers,
      budgetKey: accessToken,
      ...(input.signal ? { signal: input.signal } : {}),
    });
  } catch (error) {
    if (httpStatusOf(error) === 404) return { found: false };
    throw error;
  }
  // Some answers put the single record bare under the object's key instead of in an array.
  const value = (body as RawObject | null)?.[input.object];
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    return { found: true, items: [value as RawObject] };
  }
  return { found: true, items: listItems(body, input.object, `GET /v1 ${input.object} record`).items };
}
