/**
 * The queue worker's hooks that feed `/metrics`: each attempt's outcome and duration, and of a completed
 * job its load counts (a job that returns `byType` loaded records: `legacy` for the legacy jobs, `poll`
 * for the others) and a success for its org (a payload with `orgId`).
 */
import type { WorkerMetrics } from '../metrics/worker-metrics.ts';
import type { LoadCounts } from '../pipeline/batch.ts';
import type { QueueWorkerHooks } from '../queue/queue-worker.ts';

export function jobMetricsHooks(metrics: WorkerMetrics): QueueWorkerHooks {
  return {
    jobCompleted(name, payload, result) {
      if (typeof result === 'object' && result !== null) {
        const r = result as { byType?: Record<string, LoadCounts>; newestCreatedAt?: string | null };
        if (r.byType)
          metrics.recordLoad(r.byType, r.newestCreatedAt, name.startsWith('legacy.') ? 'legacy' : 'poll');
      }
      const orgId = (payload as { orgId?: unknown }).orgId;
      if (typeof orgId === 'string') metrics.recordSuccess(orgId, name);
    },
    jobFinished: (name, outcome, seconds) => metrics.recordJob(name, outcome, seconds),
  };
}
