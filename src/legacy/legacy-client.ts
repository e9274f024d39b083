/**
 * Typed client of the legacy (v1) API: `{legacyUrl}/v1/organizations/{orgId}/...json`, authenticated
 * with `?access_token=`, always `expanded=1` (so `activity_id` and `extras` come along), and the
 * `Service-Version` header when the organization is pinned to a version.
 *
 * Lists come as `{ summary: {...}, <object>: [...] }` and are paged by `pageBySummary`, which follows
 * `summary.next` and throws IncompleteListingError after the last page it could read when the listing
 * falls short of `summary.results`.
 */
import type { HttpClient } from '../http/http-client-types.ts';
import { buildUrl, type QueryValue } from '../validic/build-url.ts';
import { listItems, parseEnvelope, type RawObject, rawObject } from '../validic/envelopes.ts';
import type { LegacyObject } from '../validic/legacy-objects.ts';
import { pageBySummary, type SummaryPage } from './legacy-summary-pager.ts';

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
    return pageBySummary({
      firstUrl,
      limit,
      signal: range.signal,
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
