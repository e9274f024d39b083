/**
 * Deleted legacy records, found from a window read to its end.
 * Why and how: README.md, "`confirm-legacy-deletes.ts`".
 */
import type { Logger } from '../log/logger.ts';
import type { OrgClients } from '../runtime/org-clients.ts';
import { applyBatch } from '../warehouse/loader/apply-batch.ts';
import { markLegacyDeleted } from '../warehouse/mark-legacy-deleted.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import { findLegacyRecord } from './get-legacy-record.ts';
import type { SummaryPage } from './legacy-summary-pager.ts';

export interface ConfirmLegacyDeletesInput {
  warehouse: Warehouse;
  org: OrgClients;
  orgId: string;
  object: string;
  /** The window that was read completely (the bounds the request used). */
  window: { start: Date; end: Date };
  /** `_id` of every record the read listed. */
  listed: ReadonlySet<string>;
  signal?: AbortSignal;
  log?: Logger;
}

export interface ConfirmLegacyDeletesResult {
  /** Stored records of the window the read did not list (each asked for by id). */
  absent: number;
  /** Of those, newly marked deleted (404). */
  deleted: string[];
  /** Of those, found again (edited since): their current version was loaded. */
  reloaded: number;
}

/** The window's bounds as the query sent them: the legacy API takes whole seconds. */
const wholeSeconds = (date: Date) => new Date(Math.floor(date.getTime() / 1000) * 1000);

export async function confirmLegacyDeletes(
  input: ConfirmLegacyDeletesInput,
): Promise<ConfirmLegacyDeletesResult> {
  const { warehouse, org, orgId, object, listed, signal } = input;
  const candidates = await warehouse.db
    .selectFrom('validic.legacy_records')
    .select(['id', 'user_id'])
    .where('org_id', '=', orgId)
    .where('object', '=', object)
    .where('deleted_at', 'is', null)
    .where('user_id', 'is not', null)
    .where('last_updated', '>=', wholeSeconds(input.window.start))
    .where('last_updated', '<=', input.window.end)
    .orderBy('id')
    .execute();
  const absent = candidates.filter((c) => !listed.has(c.id));
  const gone: string[] = [];
  const found: unknown[] = [];
  for (const { id, user_id: userId } of absent) {
    signal?.throwIfAborted();
    const answer = await findLegacyRecord(org, {
      userId: userId!,
      object,
      recordId: id,
      ...(signal ? { signal } : {}),
    });
    if (answer.found) found.push(...answer.items);
    else gone.push(id);
  }
  if (found.length > 0) {
    await applyBatch(
      warehouse,
      { orgId, arrivedVia: 'legacy', items: found.map((raw) => ({ kind: 'legacy' as const, object, raw })) },
      {},
      input.log ? { log: input.log } : {},
    );
  }
  const deleted = await markLegacyDeleted(warehouse.db, orgId, object, gone);
  if (deleted.length > 0)
    input.log?.info({ orgId, object, deleted }, 'legacy records gone from the platform');
  return { absent: absent.length, deleted, reloaded: found.length };
}

/** Passes the pages through, adding the `_id` of every listed item (malformed ones too) to `listed`. */
export async function* collectListedIds(
  pages: AsyncIterable<SummaryPage>,
  listed: Set<string>,
): AsyncGenerator<SummaryPage> {
  for await (const page of pages) {
    for (const item of [...page.items, ...page.rejected]) {
      const id = (item as { _id?: unknown } | null)?._id;
      if (typeof id === 'string') listed.add(id);
    }
    yield page;
  }
}
