import type { LegacyObject } from '../src/legacy/legacy-objects.ts';
import { planLegacyWindows } from '../src/legacy/legacy-windows.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { legacyLatestCursor } from '../src/warehouse/cursors/legacy-latest-cursor.ts';
import { defineJob } from './define-job.ts';
import { legacySyncPayload } from './payloads.ts';

export interface LegacySyncPlan {
  object: LegacyObject;
  from: string;
  to: string;
  windows: number;
  enqueued: boolean;
}

export interface LegacySyncResult {
  objects: LegacySyncPlan[];
  /** Windows planned over every object. */
  windows: number;
}

export const legacySync = defineJob({
  name: 'legacy.sync',
  payload: legacySyncPayload,
  options: { ...JOB_RETRIES.plan, priority: JOB_PRIORITIES['legacy.sync'] },
  async run(ctx, payload): Promise<LegacySyncResult> {
    const { orgId } = payload;
    const org = ctx.org(orgId);
    const settings = ctx.settings.legacyWindow;
    const objects = [...new Set(payload.objects ?? org.legacyObjects)];
    const to = payload.to ? new Date(payload.to) : new Date();
    const lookbackMs = Math.max(1, ctx.settings.lookbackDays) * 86_400_000;

    const plans: LegacySyncPlan[] = [];
    for (const object of objects) {
      let from: Date;
      if (payload.from) from = new Date(payload.from);
      else {
        const cursor = await ctx.cursors.read(orgId, legacyLatestCursor(object));
        from = cursor
          ? new Date(Date.parse(cursor.end) - settings.overlapMs)
          : new Date(to.getTime() - lookbackMs);
      }
      const windows = planLegacyWindows(from, to, settings);
      const first = windows[0];
      const enqueued = first
        ? await ctx.enqueue('legacy.latest', {
            orgId,
            object,
            startDate: first.start.toISOString(),
            endDate: first.end.toISOString(),
            until: to.toISOString(),
          })
        : false;
      plans.push({
        object,
        from: from.toISOString(),
        to: to.toISOString(),
        windows: windows.length,
        enqueued,
      });
    }
    ctx.log.info(
      { orgId, objects: plans.map((p) => `${p.object}:${p.windows}`) },
      payload.from ? 'planned legacy backfill' : 'planned legacy sync',
    );
    return { objects: plans, windows: plans.reduce((sum, p) => sum + p.windows, 0) };
  },
});
