/**
 * Deleted legacy records, found from a window read to its end, and asked for by id within a budget.
 *
 * The legacy API never lists deletions, and `latest` windows filter by `last_updated`, so a stored
 * record absent from a later read of a window is not necessarily deleted: it may have been edited since,
 * its new `last_updated` now lying after the window. What absence does prove: a complete read of
 * [start, end] lists every record that then had a `last_updated` in [start, end] (complete as the pager
 * proves it: `summary.results` reached; an incomplete listing never gets here). So a stored record (not
 * deleted) whose stored `last_updated` lies in the window and that the read did not list was either
 * deleted or edited since. Each such record is asked for by id (one request each):
 * - 404: gone; the row gets `deleted_at` (src/warehouse/legacy-deletes.ts);
 * - found: edited; its newer version is loaded like any other (`arrived_via = 'legacy'`).
 * The answer by id decides, never absence alone, so the window's edges (inclusive or not, seconds
 * dropped from the query) can cost a request, never a wrong delete. Records without a stored user id
 * cannot be asked for and are left alone.
 *
 * Budget. Asking is one request per suspect, and suspects can come in bulk (a backfill re-reading months
 * after many edits, a platform-side cleanup), so the asking is decoupled from the finding:
 * - finding costs no request: the suspects are queued in `validic_sync.legacy_delete_checks`
 *   (src/warehouse/legacy-deletes.ts); a suspect a later complete read lists again is dropped;
 * - asking runs in passes, one after each complete window read, on the object's oldest suspects: at
 *   most `legacy.deleteChecksPerPass` (default 25) per pass, and no more than what
 *   `legacy.deleteCheckShare` (default 0.05) of the org's usable requests per hour leaves after the
 *   checks of the last hour (counted in Postgres under an advisory lock per org, so the share holds for a
 *   whole fleet). What a pass leaves waits for the next one; `legacy.latest` reports the backlog
 *   (`deleteChecksPending`) and the `legacy` command prints it.
 * - Sizing: at 2,000 requests per hour the usable rate is 1,880; 5 % is 94 checks an hour, about 2,250
 *   a day, beside the scheduled legacy polling's own ~30 requests an hour (7 objects every 15 minutes).
 *   The per-pass cap of 25 bounds one job (≈ 50 s of budget at the usable rate when the bucket is empty)
 *   and lets one object's backlog use the whole share with the schedule's 4 passes an hour. The budget
 *   planner counts the checks of the last hour with the push and reconcile fetches.
 * - A check that fails (after the HTTP client's retries) ends the pass with a warning, not the window:
 *   the window is loaded and its cursor committed. Its claim counts as spent and is asked again after an
 *   hour; claims a pass never reached are given back.
 */

import { bucketParams } from '../budget/request-budget.ts';
import type { OrganizationConfig } from '../config/schema.ts';
import type { HttpClient } from '../http/http-client-types.ts';
import type { Logger } from '../log/logger.ts';
import {
  claimLegacyDeleteChecks,
  countPendingLegacyDeleteChecks,
  markLegacyDeleted,
  queueLegacyDeleteChecks,
  releaseLegacyDeleteChecks,
  resolveLegacyDeleteChecks,
} from '../warehouse/legacy-deletes.ts';
import { applyBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import type { SummaryPage } from './legacy-client.ts';
import { findLegacyRecord } from './legacy-client.ts';

const HOUR_MS = 3_600_000;

export interface ConfirmLegacyDeletesInput {
  warehouse: Warehouse;
  org: { config: OrganizationConfig; http: HttpClient };
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
  /** Stored records of the window the read did not list (queued to be asked for by id). */
  absent: number;
  /** Suspects of the object this pass asked for by id (one request each). */
  asked: number;
  /** Of those, newly marked deleted (404). */
  deleted: string[];
  /** Of those, found again (edited since): their current version was loaded. */
  reloaded: number;
  /** Suspects of the object still waiting for a pass (the cap or the budget share stopped this one). */
  pending: number;
}

/** How much delete checks may ask: per pass, and per hour of the org's (legacy token's) budget. */
export interface LegacyDeleteCheckBudget {
  perPass: number;
  perHour: number;
}

export function legacyDeleteCheckBudget(org: OrganizationConfig): LegacyDeleteCheckBudget {
  // The usable rate is the request budget's sustained refill (src/budget/request-budget.ts), not the raw limit.
  const usablePerHour = bucketParams({ limit: org.requestsPerHour }).ratePerMs * HOUR_MS;
  return {
    perPass: org.legacy.deleteChecksPerPass,
    perHour: Math.floor(usablePerHour * org.legacy.deleteCheckShare),
  };
}

/** The window's bounds as the query sent them: the legacy API takes whole seconds. */
const wholeSeconds = (date: Date) => new Date(Math.floor(date.getTime() / 1000) * 1000);

export async function confirmLegacyDeletes(
  input: ConfirmLegacyDeletesInput,
): Promise<ConfirmLegacyDeletesResult> {
  const { warehouse, orgId, object } = input;
  const budget = legacyDeleteCheckBudget(input.org.config);
  if (budget.perPass === 0 || budget.perHour === 0) {
    return { absent: 0, asked: 0, deleted: [], reloaded: 0, pending: 0 };
  }
  const absent = await queueLegacyDeleteChecks(warehouse.db, {
    orgId,
    object,
    window: { start: wholeSeconds(input.window.start), end: input.window.end },
    listed: [...input.listed],
  });
  return { absent, ...(await askLegacyDeleteChecks(input)) };
}

/** One budgeted pass over the object's suspects: ask each by id, 404 → deleted, found → loaded. */
export async function askLegacyDeleteChecks(
  input: Omit<ConfirmLegacyDeletesInput, 'window' | 'listed'>,
): Promise<Omit<ConfirmLegacyDeletesResult, 'absent'>> {
  const { warehouse, org, orgId, object, signal, log } = input;
  const budget = legacyDeleteCheckBudget(org.config);
  const { claimed } = await claimLegacyDeleteChecks(warehouse.db, { orgId, object, ...budget });
  const gone: string[] = [];
  const foundIds: string[] = [];
  const found: unknown[] = [];
  let asked = 0;
  try {
    for (const { id, user_id: userId } of claimed) {
      signal?.throwIfAborted();
      asked++;
      const answer = await findLegacyRecord(org, {
        userId,
        object,
        recordId: id,
        ...(signal ? { signal } : {}),
      });
      if (answer.found) {
        foundIds.push(id);
        found.push(...answer.items);
      } else gone.push(id);
    }
  } catch (error) {
    if (signal?.aborted) throw error;
    // The window is loaded and its cursor committed: a check that failed must not fail the window.
    // Its claim stays (it cost a request) and is asked again after an hour.
    log?.warn({ orgId, object, err: error }, 'legacy delete check failed; it is asked again later');
  } finally {
    // Claims never asked (stopped early) cost nothing: give them back.
    const unasked = claimed.slice(asked).map((c) => c.id);
    await releaseLegacyDeleteChecks(warehouse.db, { orgId, object, ids: unasked });
  }
  if (found.length > 0) {
    await applyBatch(
      warehouse,
      { orgId, arrivedVia: 'legacy', items: found.map((raw) => ({ kind: 'legacy' as const, object, raw })) },
      {},
      log ? { log } : {},
    );
  }
  const deleted = await markLegacyDeleted(warehouse.db, orgId, object, gone);
  await resolveLegacyDeleteChecks(warehouse.db, { orgId, object, deleted: gone, found: foundIds });
  if (deleted.length > 0) log?.info({ orgId, object, deleted }, 'legacy records gone from the platform');
  const pending = await countPendingLegacyDeleteChecks(warehouse.db, orgId, object);
  if (pending > 0) {
    log?.info(
      { orgId, object, asked, pending, perPass: budget.perPass, perHour: budget.perHour },
      'legacy delete checks left for later passes (per-pass cap or budget share reached)',
    );
  }
  return { asked, deleted, reloaded: foundIds.length, pending };
}

/** Passes the pages through, adding the `_id` of every listed item (malformed ones too) to `listed`. */
export async function* collectListedIds(
  pages: AsyncIterable<SummaryPage>,
  listed: Set<string>,
): AsyncGenerator<SummaryPage> {
  let pass = 0;
  for await (const page of pages) {
    // A listing read again from its start (it changed while paged): only the last read proves absence.
    if (page.pass !== pass) {
      listed.clear();
      pass = page.pass;
    }
    for (const item of [...page.items, ...page.rejected]) {
      const id = (item as { _id?: unknown } | null)?._id;
      if (typeof id === 'string') listed.add(id);
    }
    yield page;
  }
}
