/**
 * push.prune: deletes stored push bodies (validic_sync.push_notifications), finished push fetches
 * (validic_sync.push_fetches, done or failed) and refused minutes (validic_sync.push_refusals) older than
 * `push.retentionDays` (default 30). Scheduled by the worker every `push.pruneMinutes` (default daily).
 * They are kept for inspection only; the records they announced live in the warehouse tables. Pending
 * and queued fetches are never pruned.
 */

import { z } from 'zod';
import { jobKey } from '../src/queue/job-definition.ts';
import { defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
export const pushPrunePayload = z.object({});

export const pushPrune = defineJob({
  name: 'push.prune',
  payload: pushPrunePayload,
  jobId: () => jobKey('push.prune'),
  async run(ctx): Promise<{ deleted: number; fetches: number; before: string }> {
    const before = new Date(Date.now() - ctx.settings.pushRetentionDays * 86_400_000);
    const deleted = await ctx.warehouse.prunePushNotifications(before, { signal: ctx.signal });
    const fetches = await ctx.warehouse.prunePushFetches(before, { signal: ctx.signal });
    ctx.log.info({ deleted, fetches, before: before.toISOString() }, 'old push notifications pruned');
    return { deleted, fetches, before: before.toISOString() };
  },
});

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'push.prune': { payload: typeof pushPrunePayload; job: typeof pushPrune };
  }
}
