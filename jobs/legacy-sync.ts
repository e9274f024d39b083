/**
 * legacy.sync: plans the legacy `latest` windows of an organization and starts one chain of
 * legacy.latest jobs per object (see legacy-latest.ts for why windows of one object run in sequence).
 *
 * - Scheduled (no `from`): each object continues from its cursor `legacy:latest:<object>` minus the
 *   overlap (late syncs and records stamped at a boundary are caught again; the loader removes the
 *   repeats), or from `sync.lookbackDays` ago (at least one day) when it has none, up to the platform's
 *   now (its clock, not the worker's: src/time/platform-clock.ts).
 * - Backfill (`from`, optional `to`, default now): exactly that range, whatever the cursors say; the
 *   cursors only ever move forward (legacy-windows.ts).
 */

import { z } from 'zod';
import { planLegacyWindows, platformNowForWindows } from '../src/legacy/legacy-windows.ts';
import { isoInstant } from '../src/queue/job-definition.ts';
import type { LegacyObject } from '../src/validic/platform-limits.ts';
import { LEGACY_OBJECTS } from '../src/validic/platform-limits.ts';
import { legacyLatestCursor } from '../src/warehouse/cursors.ts';
import { defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
export const legacySyncPayload = z
  .object({
    orgId: z.string().min(1),
    /** Legacy objects; default: the org's `legacy.objects`. */
    objects: z.array(z.enum(LEGACY_OBJECTS)).min(1).optional(),
    /** Backfill range start; absent: continue from each object's cursor. */
    from: isoInstant.optional(),
    /** Range end; default: now. */
    to: isoInstant.optional(),
  })
  .refine((p) => !p.from || !p.to || Date.parse(p.from) < Date.parse(p.to), {
    message: 'from must be before to',
    path: ['from'],
  });

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
  async run(ctx, payload): Promise<LegacySyncResult> {
    const { orgId } = payload;
    const org = ctx.org(orgId);
    const settings = ctx.settings.legacyWindow;
    const objects = [...new Set(payload.objects ?? org.legacyObjects)];
    // "Now" is the platform's: windows end where its `last_updated` stamps can have reached.
    const to = payload.to
      ? new Date(payload.to)
      : (
          await platformNowForWindows(ctx.platformClock, () =>
            org.legacy.getOrganization({ signal: ctx.signal }),
          )
        ).end;
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

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'legacy.sync': { payload: typeof legacySyncPayload; job: typeof legacySync };
  }
}
