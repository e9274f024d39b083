/**
 * Loads the pages of one legacy list (a latest window, a user's window, one record) page by page, each
 * page one `applyBatch` transaction. The progress (the window's cursor) rides with the LAST page, so it
 * moves only once every page of the window is committed: the pager is read one page ahead to know which
 * page is the last. An empty window still commits its progress (an empty batch). When the pages end in
 * an error (a page that failed for good, an IncompleteListingError), every page read is loaded, none with
 * the progress, and the error goes on to the job.
 */
import type { Logger } from '../log/logger.ts';
import {
  type ArrivedVia,
  addLoadResult,
  type BatchProgress,
  emptyCounts,
  type LoadResult,
} from '../pipeline/batch.ts';
import { applyBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import type { SummaryPage } from './legacy-client.ts';

export interface LoadLegacyPagesInput {
  warehouse: Warehouse;
  orgId: string;
  object: string;
  arrivedVia: Extract<ArrivedVia, 'legacy' | 'push'>;
  pages: AsyncIterable<SummaryPage>;
  /** Written with the last page (or alone when the list is empty). */
  progress?: BatchProgress;
  signal?: AbortSignal;
  log?: Logger;
}

export interface LegacyPagesResult extends LoadResult {
  /** Records received (all pages). */
  records: number;
  pages: number;
}

export function emptyLegacyPagesResult(): LegacyPagesResult {
  return { ...emptyCounts(), byType: {}, newestCreatedAt: null, transactionRetries: 0, records: 0, pages: 0 };
}

export async function loadLegacyPages(input: LoadLegacyPagesInput): Promise<LegacyPagesResult> {
  const { warehouse, orgId, object, arrivedVia, signal, log } = input;
  const result = emptyLegacyPagesResult();
  const load = async (page: SummaryPage | undefined, progress: BatchProgress | undefined) => {
    signal?.throwIfAborted();
    const elements: unknown[] = page ? [...page.items, ...page.rejected] : [];
    const items = elements.map((raw) => ({ kind: 'legacy' as const, object, raw }));
    const loaded = await applyBatch(warehouse, { orgId, arrivedVia, items }, progress, log ? { log } : {});
    addLoadResult(result, loaded);
    if (page) {
      result.records += page.items.length;
      result.pages += 1;
    }
  };
  const pages = input.pages[Symbol.asyncIterator]();
  let pending: SummaryPage | undefined;
  for (;;) {
    let next: IteratorResult<SummaryPage>;
    try {
      next = await pages.next();
    } catch (error) {
      // The listing broke off (a page that failed for good) or proved incomplete: the page already read
      // is real data, so it lands too, without the progress, which only a complete listing may move.
      if (pending) await load(pending, undefined);
      throw error;
    }
    if (next.done) break;
    if (pending) await load(pending, undefined);
    pending = next.value;
  }
  await load(pending, input.progress);
  return result;
}
