/**
 * streams.reconcile: one pass of the org's reconciliation stream (src/stream/run-reconcile-pass.ts).
 * Scheduled every `schedules.reconcileStreamMinutes` and brought forward `stream.passAfterGapSeconds`
 * after a gap of the primary stream. Its id is per org and trigger, so a burst of gaps queues one pass.
 * A pass that could not reach the stream fails the job (retried); one that timed out is done: the next
 * pass goes on from where it stopped.
 */
import { UserFacingError } from '../src/errors/index.ts';
import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import type { ReconcilePassSummary } from '../src/stream/run-reconcile-pass.ts';
import { defineJob } from './define-job.ts';
import { streamsReconcilePayload } from './payloads.ts';

export const streamsReconcile = defineJob({
  name: 'streams.reconcile',
  payload: streamsReconcilePayload,
  options: { ...JOB_RETRIES.fetch, priority: JOB_PRIORITIES['streams.reconcile'] },
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
