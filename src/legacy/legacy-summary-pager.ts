/**
 * Pages a legacy (v1) list through its `summary` block without ever looping or skipping.
 * Why and how: README.md, "`legacy-summary-pager.ts`".
 */

import { numberField, pageSignature, type RawObject } from '../validic/envelopes.ts';
import { buildUrlFrom } from './legacy-url.ts';

export interface SummaryPage {
  /** Records of the page, as received. */
  items: RawObject[];
  /** Elements of the page that were not objects (for quarantine); they still count as positions. */
  rejected: unknown[];
  /** The page's `summary` block ({} when absent). */
  summary: RawObject;
  /** Record offset this page was requested at. */
  offset: number;
}

export type FetchSummaryPage = (
  url: URL,
  signal?: AbortSignal,
) => Promise<{ items: RawObject[]; rejected?: unknown[]; summary: RawObject }>;

export interface SummaryPagerOptions {
  /** URL of the list without paging parameters (or with a start `offset`). */
  firstUrl: URL;
  /** Page size asked for (the server may apply less). */
  limit: number;
  fetchPage: FetchSummaryPage;
  signal?: AbortSignal;
  /** Safety stop (default 100,000 pages). */
  maxPages?: number;
}

export async function* pageBySummary(options: SummaryPagerOptions): AsyncGenerator<SummaryPage> {
  const { firstUrl, limit, fetchPage, signal } = options;
  const maxPages = options.maxPages ?? 100_000;
  let offset = Math.max(0, Number(firstUrl.searchParams.get('offset') ?? 0) || 0);
  const seen = new Set<number>();
  let previousSignature: string | undefined;
  for (let pages = 0; pages < maxPages; pages++) {
    if (seen.has(offset)) return;
    seen.add(offset);
    const url = buildUrlFrom(firstUrl, { offset, limit });
    const { items, rejected = [], summary } = await fetchPage(url, signal);
    if (items.length === 0 && rejected.length === 0) return;
    const signature = pageSignature(items);
    if (signature === previousSignature) return;
    previousSignature = signature;
    yield { items, rejected, summary, offset };

    const position = offset + items.length + rejected.length;
    const results = numberField(summary, 'results');
    if (results !== undefined && position >= results) return;
    const next = summary.next;
    if (next === null) return;
    if (typeof next === 'string' && next.trim() !== '') {
      const nextOffset = offsetOfLink(next, url, numberField(summary, 'limit') ?? limit);
      // A link back to the start (or anywhere already read) is the wrap-around: the list is done.
      if (nextOffset !== undefined && (nextOffset <= offset || seen.has(nextOffset))) return;
    }
    offset = position;
  }
}

/** The record offset a `next`/`previous` link points at: its `offset`, else from `page` (1-based). */
export function offsetOfLink(link: string, base: URL, fallbackLimit: number): number | undefined {
  let url: URL;
  try {
    url = new URL(link, base);
  } catch {
    return undefined;
  }
  const offset = url.searchParams.get('offset');
  if (offset !== null && offset !== '' && Number.isFinite(Number(offset))) return Number(offset);
  const page = url.searchParams.get('page');
  if (page !== null && page !== '' && Number.isFinite(Number(page))) {
    const limitParam = Number(url.searchParams.get('limit'));
    const limit = Number.isFinite(limitParam) && limitParam > 0 ? limitParam : fallbackLimit;
    return Math.max(0, (Number(page) - 1) * limit);
  }
  return undefined;
}
