/**
 * connections.reconcile: pages `/connections` for one window of at most 30 days and loads every page.
 * Events are immutable and keyed by id, so what the stream already delivered is a no-op; what it
 * missed is inserted and counted (`inserted` = events the stream missed).
 */

import { z } from 'zod';
import { emptyCounts, type LoadCounts } from '../src/pipeline/batch.ts';
import { defineJob } from '../src/queue/job-catalog.ts';
import { isoDate, jobKey } from '../src/queue/job-definition.ts';
import { reconcileLastWrite } from '../src/warehouse/cursors.ts';

/** The payload: what one run of this job is given. */
export const connectionsReconcilePayload = z.object({
  orgId: z.string().min(1),
  startDate: isoDate,
  endDate: isoDate,
  runId: z.string().optional(),
  windowKey: z.string().optional(),
});

export interface ConnectionsReconcileResult extends LoadCounts {
  events: number;
  pages: number;
}

export const connectionsReconcile = defineJob({
  name: 'connections.reconcile',
  payload: connectionsReconcilePayload,
  /** Reconciliation goes before backfill work. */
  priority: 10,
  retry: 'fetch',
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

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'connections.reconcile': {
      payload: typeof connectionsReconcilePayload;
      job: typeof connectionsReconcile;
    };
  }
}
