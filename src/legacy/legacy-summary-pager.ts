/**
 * Pages a legacy (v1) list by following its `summary.next` links as the server writes them, and proves
 * the listing complete against `summary.results`, or throws IncompleteListingError once the pages read
 * are yielded. It never loops.
 * Why and how: README.md, "`legacy-summary-pager.ts`".
 */

import { IncompleteListingError } from '../errors/index.ts';
import { numberField, type RawObject } from '../validic/envelopes.ts';

export interface SummaryPage {
  /** Records of the page, as received. */
  items: RawObject[];
  /** Elements of the page that were not objects (for quarantine); they still count as records read. */
  rejected: unknown[];
  /** The page's `summary` block ({} when absent). */
  summary: RawObject;
  /** The paging parameters this page was asked with (`page`, `offset`, `limit`; those not sent are absent). */
  request: PagingParams;
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
}

/** Query parameters that carry a credential: never taken from a link, always our own. */
const CREDENTIALS = new Set(['access_token', 'authentication_token', 'token']);
const PAGING = ['page', 'offset', 'limit'] as const;

export async function* pageBySummary(options: SummaryPagerOptions): AsyncGenerator<SummaryPage> {
  const { firstUrl, fetchPage, signal } = options;
  const maxPages = options.maxPages ?? 100_000;
  const what = options.what ?? 'a legacy list';
  // The first page: our limit, from the start offset (0 unless the caller gave one).
  let query = ownQuery(firstUrl);
  query.set('offset', String(Math.max(0, Number(query.get('offset') ?? 0) || 0)));
  query.delete('page');
  query.set('limit', String(options.limit));

  const requested = new Set<string>();
  /** Keys of every record read (its `_id`, else its JSON), to count distinct records and see repeats. */
  const read = new Set<string>();
  let results: number | undefined;
  const incomplete = (detail: string) =>
    new IncompleteListingError(what, detail, { listed: read.size, total: results });
  /** The listing ended: complete unless the server's own count says records are missing. */
  const ended = (how: string) => {
    if (results !== undefined && read.size < results) throw incomplete(`summary.results ${results}; ${how}`);
  };

  for (let pages = 0; ; pages++) {
    if (pages >= maxPages) throw incomplete(`stopped after ${maxPages} pages`);
    requested.add(requestKey(query));
    const url = withQuery(firstUrl, query);
    const { items, rejected = [], summary } = await fetchPage(url, signal);
    results = numberField(summary, 'results') ?? results;
    const elements: unknown[] = [...items, ...rejected];
    if (elements.length === 0) return ended('a page came back empty');
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
    if (fresh === 0) throw incomplete('a page repeated records already read');
    yield { items, rejected, summary, request: pagingOf(query) };

    if (results !== undefined && read.size >= results) return;
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
