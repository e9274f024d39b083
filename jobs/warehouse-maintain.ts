/**
 * warehouse.maintain: the monthly partitions' upkeep (src/warehouse/warehouse-upkeep.ts). Creates the
 * partitions of this month and the next `warehouse.partitionMonthsAhead`, and, when
 * `warehouse.rawRetentionMonths` is set, empties `raw` of older months. Scheduled by the worker every
 * `warehouse.maintainMinutes` (default daily); idempotent, so a retry or a second replica's run is harmless.
 */

import { z } from 'zod';
import { jobKey } from '../src/queue/job-definition.ts';
import { defineJob } from './job-context.ts';

/** The payload: what one run of this job is given. */
export const warehouseMaintainPayload = z.object({});

export const warehouseMaintain = defineJob({
  name: 'warehouse.maintain',
  payload: warehouseMaintainPayload,
  jobId: () => jobKey('warehouse.maintain'),
  async run(ctx): Promise<{ partitionsCreated: number; rawEmptied: number; months: string[] }> {
    const now = new Date();
    const { partitionMonthsAhead, rawRetentionMonths } = ctx.settings;
    // A long read holding the default partitions makes this a `conflict` after a while: the job waits
    // and runs again without spending an attempt, and nothing else waits for it (month-partitions.ts).
    const partitionsCreated = await ctx.warehouse.createPartitionsAhead(now, partitionMonthsAhead, {
      signal: ctx.signal,
    });
    let rawEmptied = 0;
    let months: string[] = [];
    if (rawRetentionMonths > 0) {
      const emptied = await ctx.warehouse.emptyRawBefore(now, rawRetentionMonths, ctx.signal);
      rawEmptied = emptied.emptied;
      months = emptied.months;
    }
    ctx.log.info({ partitionsCreated, rawEmptied, months }, 'warehouse maintained');
    return { partitionsCreated, rawEmptied, months };
  },
});

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'warehouse.maintain': { payload: typeof warehouseMaintainPayload; job: typeof warehouseMaintain };
  }
}
