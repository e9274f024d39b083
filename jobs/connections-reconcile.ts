/**
 * connections.reconcile: pages `/connections` for one window of at most 30 days and loads every page.
 * Events are immutable and keyed by id, so what the stream already delivered is a no-op; what it
 * missed is inserted and counted (`inserted` = events the stream missed).
 */
import { emptyCounts, type LoadCounts } from '../src/pipeline/batch.ts';
import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { reconcileLastWrite } from '../src/warehouse/cursors.ts';
import { defineJob } from './define-job.ts';
import { connectionsReconcilePayload } from './payloads.ts';

export interface ConnectionsReconcileResult extends LoadCounts {
  events: number;
  pages: number;
}

export const connectionsReconcile = defineJob({
  name: 'connections.reconcile',
  payload: connectionsReconcilePayload,
  options: { ...JOB_RETRIES.fetch, priority: JOB_PRIORITIES['connections.reconcile'] },
  jobId: (p) => jobKey('connections.reconcile', p.orgId, p.startDate, p.endDate, p.runId),
  async run(ctx, payload): Promise<ConnectionsReconcileResult> {
    const { v2 } = ctx.org(payload.orgId);
    const result: ConnectionsReconcileResult = { ...emptyCounts(), events: 0, pages: 0 };
    for await (const page of v2.listConnectionsPages({
      startDate: payload.startDate,
      endDate: payload.endDate,
      signal: ctx.signal,
    })) {
      result.pages++;
      result.events += page.connections.length;
      const loaded = await ctx.warehouse.applyBatch(
        {
          orgId: payload.orgId,
          arrivedVia: 'poll',
          items: [...page.connections, ...page.rejected].map((raw) => ({
            kind: 'connection_event' as const,
            raw,
          })),
        },
        {},
        { log: ctx.log },
      );
      for (const key of ['inserted', 'updated', 'unchanged', 'stale', 'quarantined'] as const)
        result[key] += loaded[key];
    }
    // Only after every page is committed is the window done; a crash before this line redoes the window,
    // which costs requests but no data (events are keyed by id).
    const windows =
      payload.runId && payload.windowKey
        ? [
            {
              runId: payload.runId,
              windowKey: payload.windowKey,
              records: result.events,
              requests: result.pages + 1,
            },
          ]
        : [];
    const cursor = reconcileLastWrite({
      startDate: payload.startDate,
      endDate: payload.endDate,
      events: result.events,
      missed: result.inserted,
    });
    await ctx.warehouse.applyBatch(
      { orgId: payload.orgId, arrivedVia: 'poll', items: [] },
      // Within a backfill run the events are not "missed by the stream": only reconciliations report.
      { windows, cursors: payload.runId ? [] : [cursor] },
    );
    if (payload.runId) await ctx.warehouse.finishRunIfComplete(payload.runId);
    if (result.inserted > 0) {
      ctx.log.info(
        { missed: result.inserted, window: `${payload.startDate}..${payload.endDate}` },
        'connection events that were not yet in the warehouse were added',
      );
    }
    return result;
  },
});
