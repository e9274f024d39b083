/**
 * streams.reconcile: one reconciliation of the org's stream (src/stream/reconcile-org.ts): deliveries
 * whose process died are marked interrupted, the gaps the reconciliation stream cannot reach are replayed,
 * then a pass of the reconciliation stream runs. Scheduled every `schedules.reconcileStreamMinutes` and
 * brought forward `stream.passAfterGapSeconds` after a gap. Its id is per org and trigger, so a burst of
 * gaps queues one. Without a reconciliation stream (the platform's 5 streams taken) the replay does the
 * work: that is not a failure. A delivery that failed fails the job (retried); one that timed out is done:
 * the next one goes on from where it stopped.
 */

import { z } from 'zod';
import { isoDate, jobKey } from '../src/queue/job-definition.ts';
import type { ReconcileOrgSummary } from '../src/stream/reconcile-org.ts';
import { defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
export const streamsReconcilePayload = z.object({
  orgId: z.string().min(1),
  /** What asked for it: its schedule, a gap of the primary stream (brought forward), or `reconcile`. */
  trigger: z.enum(['schedule', 'gap', 'command']).default('schedule'),
  /**
   * Without a reconciliation stream, also replay from this date (or from where the last delivery left
   * off) up to now, re-delivering what a pass would have (`reconcile --from`).
   */
  replayFrom: isoDate.optional(),
});

export const streamsReconcile = defineJob({
  name: 'streams.reconcile',
  payload: streamsReconcilePayload,
  jobId: (p) => jobKey('streams.reconcile', p.orgId, p.trigger),
  async run(ctx, payload): Promise<ReconcileOrgSummary> {
    const summary = await ctx.org(payload.orgId).reconcileStream({
      trigger: payload.trigger,
      signal: ctx.signal,
      log: ctx.log,
      ...(payload.replayFrom ? { replayFrom: payload.replayFrom } : {}),
      enqueue: (name, p) => ctx.enqueue(name, p),
    });
    if (summary.deliveries.some((d) => d.outcome === 'failed'))
      throw new Error('a delivery of the reconciliation failed; see the log');
    return summary;
  },
});

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'streams.reconcile': { payload: typeof streamsReconcilePayload; job: typeof streamsReconcile };
  }
}
