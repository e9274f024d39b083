/**
 * connections.recent: the scheduled reconciliation of connection events. Each tick queues
 * connections.reconcile for the last `days` days (default: config `schedules.reconcileDays`, 30), never
 * before the date the platform keeps events from; what the stream delivered is a no-op, what the
 * warehouse lacked is inserted, and what of it the stream missed is counted in the `reconcile:last` cursor.
 */

import { z } from 'zod';
import { jobKey } from '../src/queue/job-definition.ts';
import {
  CONNECTION_EVENTS_SINCE,
  formatUtcDate,
  MAX_REQUEST_WINDOW_DAYS,
  planDateWindows,
} from '../src/validic/platform-limits.ts';
import { defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
export const connectionsRecentPayload = z.object({
  orgId: z.string().min(1),
  days: z.number().int().min(1).max(MAX_REQUEST_WINDOW_DAYS).optional(),
});

export const connectionsRecent = defineJob({
  name: 'connections.recent',
  payload: connectionsRecentPayload,
  jobId: (p) => jobKey('connections.recent', p.orgId),
  async run(ctx, payload): Promise<{ from: string; to: string; enqueued: number }> {
    const days = payload.days ?? ctx.settings.reconcileDays;
    // The platform's today: its connection events are dated by its clock, not the worker's.
    const today = Math.floor(ctx.platformClock.now() / 86_400_000);
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

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'connections.recent': { payload: typeof connectionsRecentPayload; job: typeof connectionsRecent };
  }
}
