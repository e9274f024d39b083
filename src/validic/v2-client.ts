/**
 * Typed client of the v2 REST API: users, records per resource, connection events. The org token
 * rides as `?token=` (no header alternative exists) and also keys the request budget.
 *
 * Pagers never loop: they stop on `{}`, on `{ data: [] }`, on a short page, and when a page repeats the
 * previous page's ids (a server ignoring `offset` would otherwise be read forever). The users pager, whose
 * complete listing is the evidence that a user is gone, throws IncompleteListingError (after yielding
 * every page it read) when a page repeats users already read, or the listing ends short of `meta.total`.
 */

import { IncompleteListingError, UsageError } from '../errors/index.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import type { PlatformClock } from '../time/platform-clock.ts';
import {
  MAX_REQUEST_WINDOW_DAYS,
  parseUtcDate,
  resourcePath,
  toV2Resource,
  type V2Resource,
} from './platform-limits.ts';
import {
  buildUrl,
  LISTING_REREADS,
  listItems,
  numberField,
  pageSignature,
  parseEnvelope,
  type QueryValue,
  type RawObject,
  rawObject,
} from './requests.ts';

export interface V2ClientOptions {
  http: HttpClient;
  /** e.g. https://api.v2.validic.com (a path prefix is kept). */
  apiUrl: string;
  orgId: string;
  token: string;
  /** Safety stop for pagers, in pages (default 100,000). */
  maxPages?: number;
  /**
   * The platform's clock (src/time/platform-clock.ts), told every answer's Date by the HTTP client: a
   * user created after the users listing began shows that the listing changed while it was paged.
   */
  platformClock?: Pick<PlatformClock, 'earliestAt'>;
}

export interface UsersPage {
  /** Page index sent as `offset`. */
  offset: number;
  /** User objects as received. */
  users: RawObject[];
  /** Elements of the page that were not objects (for quarantine). */
  rejected: unknown[];
  meta: RawObject | undefined;
  /** Which read of the listing (0, then 1, 2… when it changed while paged and is read again from the start). */
  pass: number;
}

export interface ConnectionsPage {
  /** Page index sent as `page`. */
  page: number;
  /** Connection events as received. */
  connections: RawObject[];
  /** Elements of the page that were not objects (for quarantine). */
  rejected: unknown[];
  meta: RawObject | undefined;
  /** Which read of the listing (0, then 1, 2… when it changed while paged and is read again from the start). */
  pass: number;
}

export interface FetchRecordsParams {
  uid: string;
  /** Path name or record type: measurements|measurement, nutrition, intraday, summaries, workouts, sleep, cgm. */
  resource: V2Resource | string;
  /** YYYY-MM-DD inclusive; at most 30 days with endDate (use planDateWindows). */
  startDate: string;
  endDate: string;
  /** Optional source filter (comma-separated). */
  source?: string;
  signal?: AbortSignal;
}

export interface V2Client {
  listUsersPages(options?: {
    limit?: number;
    startOffset?: number;
    signal?: AbortSignal;
  }): AsyncIterable<UsersPage>;
  getUser(uid: string, options?: { signal?: AbortSignal }): Promise<RawObject>;
  /** The window's records as received; elements that are not objects are kept too (for quarantine). */
  fetchRecords(params: FetchRecordsParams): Promise<unknown[]>;
  listConnectionsPages(options: {
    startDate: string;
    endDate: string;
    limit?: number;
    startPage?: number;
    signal?: AbortSignal;
  }): AsyncIterable<ConnectionsPage>;
}

/**
 * Whether a page is known to be the last without asking for the next one. Only what the server said
 * counts: a page shorter than the `meta.limit` it reports, or `meta.total` reached. Without `meta` a
 * short page proves nothing (a server may silently apply a smaller limit than asked), so the pager
 * asks once more and stops on the `{}` the spec promises past the end.
 */
function isLastPage(count: number, meta: RawObject | undefined, page?: number): boolean {
  const applied = numberField(meta, 'limit');
  if (applied === undefined) return false;
  if (count < applied) return true;
  const total = numberField(meta, 'total');
  return page !== undefined && total !== undefined && (page + 1) * applied >= total;
}

/** A user's `created_at` in ms (NaN when absent or unreadable, which compares false). */
function createdAt(user: RawObject): number {
  return typeof user.created_at === 'string' ? Date.parse(user.created_at) : Number.NaN;
}

/**
 * Adds to `read` the key of each element (its string `field`, else its JSON): how many were not there yet,
 * so a page that repeats part of what a pass read shows.
 */
function markRead(elements: readonly unknown[], read: Set<string>, field: 'uid' | 'id'): number {
  let fresh = 0;
  for (const element of elements) {
    const value = (element as Record<string, unknown> | null)?.[field];
    const key = typeof value === 'string' ? `${field}:${value}` : `json:${JSON.stringify(element)}`;
    if (!read.has(key)) {
      read.add(key);
      fresh++;
    }
  }
  return fresh;
}

/**
 * How a listing moved under the pager, if it did: its count changed from the pass's first page
 * (`total`), or page `page` repeated some of what was read (`fresh` of its `count` elements were new).
 * Offsets then shifted, and one element may have been skipped: the pass is read again from the start.
 */
function listingMoved(
  total: number | undefined,
  pageTotal: number | undefined,
  page: number,
  count: number,
  fresh: number,
  noun: string,
): string | undefined {
  if (total !== undefined && pageTotal !== undefined && pageTotal !== total)
    return `meta.total went from ${total} to ${pageTotal}`;
  if (fresh < count) return `page ${page} repeated ${count - fresh} ${noun} already read`;
  return undefined;
}

export function createV2Client(options: V2ClientOptions): V2Client {
  const { http, apiUrl, orgId, token } = options;
  const maxPages = options.maxPages ?? 100_000;
  const url = (segments: string[], query: Record<string, QueryValue> = {}) =>
    buildUrl(apiUrl, ['organizations', orgId, ...segments], { ...query, token });
  const get = (target: URL, signal: AbortSignal | undefined) =>
    http.getJson<unknown>(target, { signal, budgetKey: token });

  return {
    async *listUsersPages({ limit = 1000, startOffset = 0, signal } = {}) {
      const what = 'GET /users';
      let pages = 0;
      /** Users an earlier read listed: they were there before this read began, whatever their created_at says. */
      const listedBefore = new Set<string>();
      let lastRead = new Set<string>();
      for (let pass = 0; ; pass++) {
        for (const key of lastRead) listedBefore.add(key);
        /** Every user read in this pass (its uid, else its JSON), to count distinct users and see repeats. */
        const read = new Set<string>();
        lastRead = read;
        /** `meta.total` as this pass's first page gave it: a page giving another means users came or went. */
        let total: number | undefined;
        const incomplete = (detail: string) =>
          new IncompleteListingError(what, detail, { listed: read.size, total });
        let moved: string | undefined;
        /** The platform's time (at the earliest) when this read's first page was asked. */
        let since: number | undefined;
        for (let offset = startOffset; ; offset++, pages++) {
          if (pages >= maxPages) throw incomplete(`stopped after ${maxPages} pages`);
          const sentAt = Date.now();
          const body = await get(url(['users'], { limit, offset }), signal);
          // Read after the answer, whose Date the platform clock has just been told.
          since ??= options.platformClock?.earliestAt(sentAt);
          const { items, rejected, meta } = listItems(body, 'data', what);
          const pageTotal = numberField(meta, 'total');
          const elements: unknown[] = [...items, ...rejected];
          const fresh = markRead(elements, read, 'uid');
          // Only a full listing started at the first page can be held against meta.total.
          const ended = (how: string) => {
            if (startOffset === 0 && total !== undefined && read.size < total)
              throw incomplete(`meta.total ${total}; ${how}`);
          };
          if (elements.length > 0 && fresh === 0)
            throw incomplete(`page ${offset} repeated users already read`);
          if (elements.length > 0) yield { offset, users: items, rejected, meta, pass };
          // Users added or deleted while the listing was paged: a user deleted before the read point shifts
          // every later one back, and one of them is never served.
          moved = listingMoved(total, pageTotal, offset, elements.length, fresh, 'users');
          if (moved) break;
          // A user created since the first page was asked: the listing changed under the pager, and a
          // user deleted meanwhile (its count then unchanged) may have shifted one past the read point.
          const listedSince = since;
          const newcomer =
            listedSince === undefined || offset === startOffset
              ? undefined
              : items.find((u) => createdAt(u) >= listedSince && !listedBefore.has(`uid:${String(u.uid)}`));
          if (newcomer) {
            moved = `user ${String(newcomer.uid)} was created after the listing began`;
            break;
          }
          total ??= pageTotal;
          if (elements.length === 0) return ended('the listing ended');
          if (isLastPage(items.length, meta)) return ended(`page ${offset} was the last`);
        }
        if (pass >= LISTING_REREADS)
          throw incomplete(`the listing changed while it was paged, ${pass + 1} reads in a row (${moved})`);
      }
    },

    async getUser(uid, { signal } = {}) {
      const body = await get(url(['users', uid]), signal);
      // A single object comes bare; tolerate `{ data: {...} }` too.
      const user = parseEnvelope(rawObject, body, 'GET /users/{uid}');
      const inner = user.data;
      return inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as RawObject) : user;
    },

    async fetchRecords({ uid, resource, startDate, endDate, source, signal }) {
      const name = toV2Resource(resource);
      const days = parseUtcDate(endDate) - parseUtcDate(startDate) + 1;
      if (days < 1 || days > MAX_REQUEST_WINDOW_DAYS) {
        throw new UsageError(
          `record window ${startDate}..${endDate} spans ${days} days; the platform allows 1 to ${MAX_REQUEST_WINDOW_DAYS}`,
          'split the range with planDateWindows()',
        );
      }
      const body = await get(
        url(['users', uid, resourcePath(name)], { start_date: startDate, end_date: endDate, source }),
        signal,
      );
      const { items, rejected } = listItems(body, 'data', `GET /users/{uid}/${name}`);
      return [...items, ...rejected];
    },

    async *listConnectionsPages({ startDate, endDate, limit = 1000, startPage = 0, signal }) {
      const what = 'GET /connections';
      let pages = 0;
      for (let pass = 0; ; pass++) {
        let previous: string | undefined;
        /** Events read in this pass (their id, else their JSON), to see a page repeat part of what was read. */
        const read = new Set<string>();
        /** `meta.total` as this pass's first page gave it: a page giving another means the listing moved. */
        let total: number | undefined;
        let moved: string | undefined;
        for (let page = startPage; ; page++, pages++) {
          if (pages >= maxPages) return;
          const body = await get(
            url(['connections'], { start_date: startDate, end_date: endDate, page, limit }),
            signal,
          );
          const { items, rejected, meta } = listItems(body, 'connections', what);
          if (items.length === 0 && rejected.length === 0) return;
          const signature = pageSignature(items);
          if (signature === previous) return;
          previous = signature;
          const elements: unknown[] = [...items, ...rejected];
          const fresh = markRead(elements, read, 'id');
          yield { page, connections: items, rejected, meta, pass };
          const pageTotal = numberField(meta, 'total');
          moved = listingMoved(total, pageTotal, page, elements.length, fresh, 'events');
          if (moved) break;
          total ??= pageTotal;
          if (isLastPage(items.length, meta, page)) return;
        }
        if (pass >= LISTING_REREADS) {
          throw new IncompleteListingError(
            what,
            `the listing changed while it was paged, ${pass + 1} reads in a row (${moved})`,
            { listed: read.size, total },
          );
        }
      }
    },
  };
}
