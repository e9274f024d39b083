/**
 * Counts HTTP attempts for a command's closing summary (requests, retries, by status). The worker's
 * prom-client metrics hang off the same `onRequest` hook.
 */
import type { RequestEvent } from './http-client-types.ts';

export interface RequestStats {
  requests: number;
  retries: number;
  byStatus: Record<string, number>;
  record(event: RequestEvent): void;
}

export function createRequestStats(): RequestStats {
  const stats: RequestStats = {
    requests: 0,
    retries: 0,
    byStatus: {},
    record(event) {
      stats.requests++;
      if (event.attempt > 1) stats.retries++;
      const key = event.status === 0 ? (event.error ?? 'network') : String(event.status);
      stats.byStatus[key] = (stats.byStatus[key] ?? 0) + 1;
    },
  };
  return stats;
}
