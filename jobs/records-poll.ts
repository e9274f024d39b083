/**
 * records.poll: one user × one window (≤ 30 days) × one or more resources.
 *
 * One request per resource brings that resource's records; all of them are loaded in ONE transaction with
 * the ledger windows they complete (when part of a backfill run), so a resumed backfill skips exactly the
 * windows whose data is committed.
 *
 * Why several resources per job: a user's 30-day window of one resource often holds about 30 records,
 * so a job per resource spent most of its time on the transaction, not the data. Resources are loaded
 * together, in batches of up to MAX_KEY_LOCKS records (a bigger batch would lock the whole org), at the
 * same number of requests. Requests of a job run one after another: `sync.concurrency` still bounds
 * the requests in flight.
 *
 * A failing resource does not hold the others back: what was fetched is loaded (and its windows marked
 * done), then the error is raised. After a permanent error the remaining resources are still fetched
 * (the job then fails for good, leaving that window pending in the ledger); after any other error the
 * job stops and is retried, and a retry within a backfill run fetches only the still-pending resources.
 *
 * A 404 on a user-scoped endpoint may mean the user is gone (deleted users answer 404 everywhere) or
 * only that this resource is not served: the job asks for the user itself (one request). A 404 there
 * too marks the user removed (no longer polled, see remove-users.ts), marks this job's remaining ledger
 * windows done with no records (the run can finish) and ends the job successfully: a deleted user's
 * windows must not fail every hour forever. A user that answers is kept, and the 404 is the resource's.
 */

import { z } from 'zod';
import { httpStatusOf, PermanentError } from '../src/errors/index.ts';
import type { LoadResult, RawItem, WindowDone } from '../src/pipeline/batch.ts';
import { addLoadResult, emptyLoadResult } from '../src/pipeline/batch.ts';
import { isoDate, jobKey } from '../src/queue/job-definition.ts';
import { MAX_KEY_LOCKS } from '../src/warehouse/loader/apply-batch.ts';
import { recordsWindowKey } from '../src/warehouse/window-ledger.ts';
import { defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
export const recordsPollPayload = z.preprocess(
  // Jobs queued by an earlier version carry one `resource` (and its `windowKey`, which was the same
  // recordsWindowKey): read them as a job of that one resource, so an upgrade mid-backfill loses none.
  (value) => {
    if (typeof value !== 'object' || value === null || 'resources' in value) return value;
    const { resource, windowKey: _windowKey, ...rest } = value as Record<string, unknown>;
    return resource === undefined ? value : { ...rest, resources: [resource] };
  },
  z.object({
    orgId: z.string().min(1),
    uid: z.string().min(1),
    /** v2 resource names, fetched in this order. */
    resources: z.array(z.string().min(1)).min(1),
    startDate: isoDate,
    endDate: isoDate,
    /** The backfill run whose ledger windows (recordsWindowKey of each resource) this poll completes. */
    runId: z.string().optional(),
    /** Queued by the records.recent tick: its completion is written to validic_sync.recent_polls. */
    recent: z.boolean().optional(),
    /**
     * Queued by the first sync of this primary stream, after the stream was heard: its completion is
     * written to validic_sync.first_sync_polls (src/budget/first-sync.ts).
     */
    firstSync: z.string().min(1).optional(),
  }),
);

export interface RecordsPollResult extends LoadResult {
  records: number;
  /** The user answered 404 and is now marked removed; the job's remaining resources were skipped. */
  userRemoved?: boolean;
}

export const recordsPoll = defineJob({
  name: 'records.poll',
  payload: recordsPollPayload,
  // A first sync's poll is its own unit of work (it records what it covers), never one queued before.
  jobId: (p) =>
    jobKey(
      'records.poll',
      p.orgId,
      p.uid,
      p.resources.join(','),
      p.startDate,
      p.endDate,
      p.runId,
      ...(p.firstSync ? [`first-sync:${p.firstSync}`] : []),
    ),
  async run(ctx, payload): Promise<RecordsPollResult> {
    const { v2 } = ctx.org(payload.orgId);
    const { uid, startDate, endDate, runId } = payload;
    const keyOf = (resource: string) => recordsWindowKey(resource, uid, startDate, endDate);
    let resources = payload.resources;
    if (runId && ctx.attempt > 1) {
      // A retry: resources loaded by an earlier attempt are done in the ledger; skip them.
      const pending = await ctx.warehouse.pendingWindowKeys(runId, resources.map(keyOf));
      resources = resources.filter((r) => pending.has(keyOf(r)));
    }

    const totals = emptyLoadResult();
    let items: RawItem[] = [];
    let windows: WindowDone[] = [];
    let fetched = 0;
    /** Loads what is gathered (records and the ledger windows they complete) in one transaction. */
    const flush = async () => {
      if (items.length === 0 && windows.length === 0) return;
      const loaded = await ctx.warehouse.applyBatch(
        { orgId: payload.orgId, arrivedVia: 'poll', items },
        { windows },
        { log: ctx.log },
      );
      addLoadResult(totals, loaded);
      items = [];
      windows = [];
    };
    let failure: unknown;
    for (const [index, resource] of resources.entries()) {
      let records: unknown[];
      try {
        records = await v2.fetchRecords({ uid, resource, startDate, endDate, signal: ctx.signal });
      } catch (error) {
        if (ctx.signal.aborted) throw error;
        if (httpStatusOf(error) === 404 && (await userIsGone(v2, uid, ctx.signal))) {
          await ctx.warehouse.markUsersRemoved(payload.orgId, [uid]);
          ctx.log.info({ orgId: payload.orgId, uid }, 'user answers 404: marked removed, no longer polled');
          // What was fetched before is loaded; the windows of this and the remaining resources are done.
          for (const rest of resources.slice(index)) {
            if (runId)
              windows.push({
                runId,
                windowKey: keyOf(rest),
                records: 0,
                requests: rest === resource ? 2 : 0,
              });
          }
          await flush();
          if (runId) await ctx.warehouse.finishRunIfComplete(runId);
          return { ...totals, records: fetched, userRemoved: true };
        }
        failure ??= error;
        // A resource that fails for good (say it is not enabled) must not keep the others out; any other
        // failure (an outage, the budget) would meet the next request too: stop and load what came.
        if (error instanceof PermanentError) continue;
        break;
      }
      // A batch of more keys than the loader locks one by one would lock the whole org (apply-batch.ts)
      // and stop other jobs' loads: load what is gathered first.
      if (items.length > 0 && items.length + records.length > MAX_KEY_LOCKS) await flush();
      fetched += records.length;
      for (const raw of records) items.push({ kind: 'record', raw });
      if (runId) windows.push({ runId, windowKey: keyOf(resource), records: records.length, requests: 1 });
    }
    await flush();
    // A resource refused for good would refuse again: the user's poll is as done as it can be.
    if (failure === undefined || failure instanceof PermanentError) {
      const at = new Date();
      if (payload.recent) await ctx.warehouse.markRecentPollDone(payload.orgId, uid, at);
      if (payload.firstSync)
        await ctx.warehouse.markFirstSyncPolled({
          orgId: payload.orgId,
          streamName: payload.firstSync,
          uid,
          startDate,
          endDate,
          at,
        });
    }
    if (failure !== undefined) throw failure;
    if (runId) await ctx.warehouse.finishRunIfComplete(runId);
    return { ...totals, records: fetched };
  },
});

/** True when the user itself answers 404 (gone); false when it answers, so the 404 was the resource's. */
async function userIsGone(
  v2: { getUser(uid: string, options?: { signal?: AbortSignal }): Promise<unknown> },
  uid: string,
  signal: AbortSignal,
): Promise<boolean> {
  try {
    await v2.getUser(uid, { signal });
    return false;
  } catch (error) {
    if (httpStatusOf(error) === 404) return true;
    throw error;
  }
}

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'records.poll': { payload: typeof recordsPollPayload; job: typeof recordsPoll };
  }
}
