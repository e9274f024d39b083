/**
 * connections.recent: the scheduled reconciliation of connection events. Each tick queues
 * connections.reconcile for the last `days` days (default: config `schedules.reconcileDays`, 30), never
 * before the date the platform keeps events from; what the stream delivered is a no-op, what it missed
 * is inserted and counted in the `reconcile:last` cursor.
 */
import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { formatUtcDate, planDateWindows } from '../src/validic/date-windows.ts';
import { CONNECTION_EVENTS_SINCE } from '../src/validic/platform-limits.ts';
import { defineJob } from './define-job.ts';
import { connectionsRecentPayload } from './payloads.ts';

export const connectionsRecent = defineJob({
  name: 'connections.recent',
  payload: connectionsRecentPayload,
  options: { ...JOB_RETRIES.plan, priority: JOB_PRIORITIES['connections.recent'] },
  jobId: (p) => jobKey('connections.recent', p.orgId),
  async run(ctx, payload): Promise<{ from: string; to: string; enqueued: number }> {
    const days = payload.days ?? ctx.settings.reconcileDays;
    const today = Math.floor(Date.now() / 86_400_000);
    const to = formatUtcDate(today);
    let from = formatUtcDate(today - (days - 1));
    if (from < CONNECTION_EVENTS_SINCE) from = CONNECTION_EVENTS_SINCE;
    let enqueued = 0;
    if (from <= to) {
      for (const window of planDateWindows(from, to)) {
        if (await ctx.enqueue('connections.reconcile', { orgId: payload.orgId, ...window })) enqueued++;
      }
    }
    return { from, to, enqueued };
  },
});
