/**
 * records.recent: the scheduled poll of the recent past. Late data (a device syncing days later) lands
 * in windows that already passed, and the stream may miss some; so every tick re-polls the last
 * `sync.lookbackDays` days (plus today) of every known user not removed (pollableUsers), all configured resources, as records.poll jobs
 * without a backfill run. A rolling range of at most 30 days is one window per user × resource, so
 * nothing is planned in the ledger (which would grow by users × resources rows per tick); windows
 * that closed before the lookback are simply never planned again. The loader makes the repeats no-ops,
 * and records.poll's deterministic id keeps a window from being queued twice while one waits.
 */
import { z } from 'zod';
import { formatUtcDate, planRecordWindows } from '../src/validic/date-windows.ts';
import { toV2Resource } from '../src/validic/v2-resources.ts';
import { pollableUsers } from '../src/warehouse/pollable-users.ts';
import { defineJob } from './job-definition.ts';
import { syncUsers } from './users-sync.ts';

export const recordsRecentPayload = z.object({
  orgId: z.string().min(1),
  /** Days back from today; default: config `sync.lookbackDays`. */
  lookbackDays: z.number().int().min(0).max(30).optional(),
});

export interface RecordsRecentResult {
  from: string;
  to: string;
  users: number;
  enqueued: number;
}

export const recordsRecent = defineJob({
  name: 'records.recent',
  payload: recordsRecentPayload,
  options: { attempts: 3, backoff: { type: 'exponential', delay: 5000 }, priority: 12 },
  jobId: (p) => `records.recent|${encodeURIComponent(p.orgId)}`,
  async run(ctx, payload): Promise<RecordsRecentResult> {
    const org = ctx.org(payload.orgId);
    const days = payload.lookbackDays ?? ctx.config.sync.lookbackDays;
    const today = Math.floor(Date.now() / 86_400_000);
    const from = formatUtcDate(today - days);
    const to = formatUtcDate(today);
    let users = await pollableUsers(ctx.warehouse.db, payload.orgId);
    // First tick of a fresh warehouse (the users schedule may not have run yet): read the users first.
    if (users.length === 0) {
      await syncUsers(ctx, payload.orgId);
      users = await pollableUsers(ctx.warehouse.db, payload.orgId);
    }
    const resources = [...new Set(org.config.resources.map(toV2Resource))];
    let enqueued = 0;
    // One day more at each edge: the platform may window by the user's local date (date-windows.ts).
    for (const window of planRecordWindows(from, to)) {
      for (const uid of users) {
        ctx.signal.throwIfAborted();
        const added = await ctx.enqueue('records.poll', { orgId: payload.orgId, uid, resources, ...window });
        if (added) enqueued++;
      }
    }
    return { from, to, users: users.length, enqueued };
  },
});
