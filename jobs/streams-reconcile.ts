/**
 * streams.reconcile: one pass of the org's reconciliation stream (src/stream/reconciliation.ts).
 * Scheduled every `schedules.reconcileStreamMinutes` and brought forward `stream.passAfterGapSeconds`
 * after a gap of the primary stream. Its id is per org and trigger, so a burst of gaps queues one pass.
 * A pass that could not reach the stream fails the job (retried); one that timed out is done: the next
 * pass goes on from where it stopped.
 */

import { z } from 'zod';
import { UserFacingError } from '../src/errors/index.ts';
import { defineJob } from '../src/queue/job-catalog.ts';
import { jobKey } from '../src/queue/job-definition.ts';
import type { ReconcilePassSummary } from '../src/stream/reconciliation.ts';

/** The payload: what one run of this job is given. */
export const streamsReconcilePayload = z.object({
  orgId: z.string().min(1),
  /** What asked for the pass: its schedule, a gap of the primary stream (brought forward), or `reconcile`. */
  trigger: z.enum(['schedule', 'gap', 'command']).default('schedule'),
});

export const streamsReconcile = defineJob({
  name: 'streams.reconcile',
  payload: streamsReconcilePayload,
  /** A pass of the reconciliation stream: one request, and what it finds is data the stream lost. */
  priority: 6,
  retry: 'fetch',
  jobId: (p) => jobKey('streams.reconcile', p.orgId, p.trigger),
  async run(ctx, payload): Promise<ReconcilePassSummary> {
    const summary = await ctx
      .org(payload.orgId)
      .reconcileStream({ trigger: payload.trigger, signal: ctx.signal, log: ctx.log });
    if (summary.outcome === 'unavailable') {
      throw new UserFacingError(`the reconciliation stream is unavailable: ${summary.unavailable?.why}`, {
        fix: summary.unavailable?.fix ?? 'see the log',
      });
    }
    if (summary.outcome === 'failed') throw new Error('the reconciliation pass failed; see the log');
    return summary;
  },
});

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'streams.reconcile': { payload: typeof streamsReconcilePayload; job: typeof streamsReconcile };
  }
}
