/**
 * push.drain: claims due push fetches (validic_sync.push_fetches) within push's share of the request
 * budget and queues a legacy.fetch job for each; what the share does not allow yet waits in the table.
 *
 * push.drain: turns due push fetches (validic_sync.push_fetches) into legacy.fetch jobs within push's
 * share of the request budget. It runs on a tick (`budget.tickSeconds`, when push is configured) and is
 * kicked by every notification for when its items fall due (job id `push.drain|org|due`: one per org and
 * second, however many notifications). Each run:
 *
 * 1. resumes notifications cut off between their body and their last part of items (status `received`
 *    for two minutes);
 * 2. reads push's cap (`ctx.readPushCap`: the plan's `pushShare` without reading every user) and cuts it
 *    into windows (src/push/process-push-notification.ts);
 * 3. claims, in one transaction under a per-org lock, what the gate allows: fetches whose job was lost
 *    (queued an hour without finishing; failed after the third time), then refused-minute windows, then
 *    the oldest due fetches;
 * 4. queues a legacy.fetch for each at legacy.fetch's own priority (10: before the recent poll, which
 *    this gate keeps from starving), not its own more urgent one.
 *
 * What the gate does not allow waits in the table for a later run; nothing is dropped.
 */

import { z } from 'zod';
import { WINDOW_TICKS } from '../src/budget/read-budget-plan.ts';
import { pushDrainAllowance, pushDrainWindow } from '../src/push/process-push-notification.ts';
import { pushOrgResolver } from '../src/push/push-admission.ts';
import { isoInstant, jobKey } from '../src/queue/job-definition.ts';
import { type CatalogJobContext, defineJob } from './job-context.ts';
import { type LegacyFetchPayload, legacyFetch } from './legacy-fetch.ts';

/** The payload: what one run of this job is given. */
export const pushDrainPayload = z.object({
  orgId: z.string().min(1),
  /** A kick: the instant the items it was queued for fall due (part of its job id); absent on the tick. */
  due: isoInstant.optional(),
});

/** A queued fetch not finished after this long is taken as lost and queued again (same job id). */
export const PUSH_FETCH_LOST_AFTER_MS = 3_600_000;
/** A fetch queued this many times without finishing fails (its row says why) instead. */
export const PUSH_FETCH_MAX_CLAIMS = 3;
/** A notification still `received` after this long was cut off mid-processing: it is resumed. */
export const PUSH_RESUME_AFTER_MS = 120_000;

export interface PushDrainResult {
  /** Notifications whose cut-off processing this run finished. */
  resumed: number;
  /** Push's cap (requests per hour) and the gate's window. */
  capPerHour: number;
  windowMs: number;
  perWindow: number;
  /** What the gate allowed, what was claimed, and the legacy.fetch jobs newly queued (a lost one may still wait). */
  allowed: number;
  claimed: number;
  enqueued: number;
  /** Fetches that were lost too often and failed now. */
  gaveUp: number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

/** The drain at `now` (the job passes the clock's time; tests drive it with a simulated one). */
export async function drainPushFetches(
  ctx: CatalogJobContext,
  orgId: string,
  now: number,
): Promise<PushDrainResult> {
  const settings = ctx.settings.push;
  const resumed = await ctx.warehouse.resumePushNotifications({
    orgId,
    olderThan: new Date(now - PUSH_RESUME_AFTER_MS),
    resolveOrg: pushOrgResolver({ organizations: settings.organizations }),
    options: {
      now,
      coalesceMs: settings.coalesceMs,
      updatedMarginMs: settings.updatedMarginMs,
      partItems: settings.partItems,
    },
  });
  for (const r of resumed.filter((r) => r.error))
    ctx.log.warn({ notification: r.id, error: r.error }, 'push notification could not be resumed yet');
  const capPerHour = await ctx.readPushCap(orgId);
  const window = pushDrainWindow(capPerHour, WINDOW_TICKS * ctx.settings.tickMs);
  const claim = await ctx.warehouse.claimPushFetches({
    orgId,
    now,
    windowMs: window.windowMs,
    lostAfterMs: PUSH_FETCH_LOST_AFTER_MS,
    maxClaims: PUSH_FETCH_MAX_CLAIMS,
    allowance: (counts) => pushDrainAllowance({ window, tickMs: ctx.settings.tickMs, now, ...counts }),
  });
  let enqueued = 0;
  for (const f of claim.claimed) {
    ctx.signal.throwIfAborted();
    const payload: LegacyFetchPayload = {
      orgId: f.orgId,
      object: f.object as LegacyFetchPayload['object'],
      fetchId: f.id,
      ...(f.userId ? { userId: f.userId } : {}),
      ...(f.recordId ? { recordId: f.recordId } : {}),
      ...(f.sources ? { sources: f.sources } : {}),
      ...(f.mode === 'activity' && f.rangeStart && f.rangeEnd
        ? { activityFrom: iso(f.rangeStart)!, activityTo: iso(f.rangeEnd)! }
        : {}),
      ...((f.mode === 'updated' || f.mode === 'refused') && f.rangeStart && f.rangeEnd
        ? { updatedFrom: iso(f.rangeStart)!, updatedTo: iso(f.rangeEnd)! }
        : {}),
    };
    // Its own priority, not this job's more urgent one: push fetches go before the recent poll only
    // because this gate keeps them within push's share.
    if (await ctx.enqueue('legacy.fetch', payload, { priority: legacyFetch.priority })) enqueued++;
  }
  const result: PushDrainResult = {
    resumed: resumed.filter((r) => r.result).length,
    capPerHour,
    windowMs: window.windowMs,
    perWindow: window.perWindow,
    allowed: claim.allowed,
    claimed: claim.claimed.length,
    enqueued,
    gaveUp: claim.gaveUp,
  };
  if (claim.gaveUp > 0)
    ctx.log.warn({ orgId, gaveUp: claim.gaveUp }, 'push fetches lost too often: marked failed');
  if (claim.allowed === 0)
    ctx.log.debug({ orgId, ...result }, 'push share of the request budget spent for now: due fetches wait');
  return result;
}

export const pushDrain = defineJob({
  name: 'push.drain',
  payload: pushDrainPayload,
  // A kick names the instant its items fall due: one drain per org and second, however many pushes.
  jobId: (p) => jobKey('push.drain', p.orgId, p.due),
  run: (ctx, payload) => drainPushFetches(ctx, payload.orgId, Date.now()),
});

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'push.drain': { payload: typeof pushDrainPayload; job: typeof pushDrain };
  }
}
