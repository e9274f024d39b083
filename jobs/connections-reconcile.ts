/**
 * connections.reconcile: pages `/connections` for one window of at most 30 days and loads every page.
 * Events are immutable and keyed by id, so what the stream already delivered is a no-op. What the
 * warehouse lacked is inserted (`inserted`); of that, only what was created while the primary stream
 * delivered (inside its committed span, src/warehouse/stream-bookkeeping.ts `readPrimaryStreamSpan`) was
 * missed by the stream (`missed`): a first reconciliation over an empty warehouse, or of days before the
 * stream started, adds events without reporting a loss.
 */

import { z } from 'zod';
import { emptyCounts, type LoadCounts } from '../src/pipeline/batch.ts';
import { isoDate, jobKey } from '../src/queue/job-definition.ts';
import { reconcileLastWrite } from '../src/warehouse/cursors.ts';
import { defineJob } from './job-context.ts';

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
  /** Events the warehouse lacked that were created while the primary stream delivered: its loss. */
  missed: number;
}

/** How far the platform's sending order and `created_at` may disagree (whole seconds on events). */
const ORDER_SLACK_MS = 2_000;

export const connectionsReconcile = defineJob({
  name: 'connections.reconcile',
  payload: connectionsReconcilePayload,
  jobId: (p) => jobKey('connections.reconcile', p.orgId, p.startDate, p.endDate, p.runId),
  async run(ctx, payload): Promise<ConnectionsReconcileResult> {
    const org = ctx.org(payload.orgId);
    const result: ConnectionsReconcileResult = { ...emptyCounts(), events: 0, pages: 0, missed: 0 };
    // A stream whose filter leaves connection events out was never to deliver them: nothing it missed.
    const span = org.streamCarriesConnections
      ? await ctx.warehouse.readPrimaryStreamSpan(payload.orgId, org.streamName)
      : undefined;
    for await (const page of org.v2.listConnectionsPages({
      startDate: payload.startDate,
      endDate: payload.endDate,
      signal: ctx.signal,
    })) {
      result.pages++;
      result.events += page.connections.length;
      if (span) {
        const ids = page.connections.flatMap((e) => (typeof e.id === 'string' ? [e.id] : []));
        const absent = await ctx.warehouse.absentConnectionEvents(payload.orgId, ids);
        for (const event of page.connections) {
          const created = Date.parse(String(event.created_at ?? ''));
          if (
            typeof event.id === 'string' &&
            absent.has(event.id) &&
            created >= span.fromMs &&
            created <= span.throughMs - ORDER_SLACK_MS
          )
            result.missed += 1;
        }
      }
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
      missed: result.missed,
    });
    await ctx.warehouse.applyBatch(
      { orgId: payload.orgId, arrivedVia: 'poll', items: [] },
      // Within a backfill run the events are not "missed by the stream": only reconciliations report.
      { windows, cursors: payload.runId ? [] : [cursor] },
    );
    if (payload.runId) await ctx.warehouse.finishRunIfComplete(payload.runId);
    if (result.inserted > 0) {
      ctx.log.info(
        { added: result.inserted, missed: result.missed, window: `${payload.startDate}..${payload.endDate}` },
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
