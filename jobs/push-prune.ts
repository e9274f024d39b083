import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { defineJob } from './define-job.ts';
import { pushPrunePayload } from './payloads.ts';

export const pushPrune = defineJob({
  name: 'push.prune',
  payload: pushPrunePayload,
  options: { ...JOB_RETRIES.housekeeping, priority: JOB_PRIORITIES['push.prune'] },
  jobId: () => jobKey('push.prune'),
  async run(ctx): Promise<{ deleted: number; before: string }> {
    const before = new Date(Date.now() - ctx.settings.pushRetentionDays * 86_400_000);
    const deleted = await ctx.warehouse.prunePushNotifications(before, { signal: ctx.signal });
    ctx.log.info({ deleted, before: before.toISOString() }, 'old push notifications pruned');
    return { deleted, before: before.toISOString() };
  },
});
