/**
 * warehouse.maintain: the monthly partitions' upkeep (src/warehouse/warehouse-upkeep.ts). Creates the
 * partitions of this month and the next `warehouse.partitionMonthsAhead`, and, when
 * `warehouse.rawRetentionMonths` is set, empties `raw` of older months. Scheduled by the worker every
 * `warehouse.maintainMinutes` (default daily); idempotent, so a retry or a second replica's run is harmless.
 */
import { z } from 'zod';
import { jobKey } from '../src/queue/job-key.ts';
import { JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { createPartitionsAhead, emptyRawBefore } from '../src/warehouse/warehouse-upkeep.ts';
import { defineJob } from './define-job.ts';

export const warehouseMaintainPayload = z.object({});

export const warehouseMaintain = defineJob({
  name: 'warehouse.maintain',
  payload: warehouseMaintainPayload,
  options: { ...JOB_RETRIES.housekeeping, priority: JOB_PRIORITIES['warehouse.maintain'] },
  jobId: () => jobKey('warehouse.maintain'),
  async run(ctx): Promise<{ partitionsCreated: number; rawEmptied: number; months: string[] }> {
    const now = new Date();
    const { partitionMonthsAhead, rawRetentionMonths } = ctx.settings;
    const partitionsCreated = await createPartitionsAhead(ctx.warehouse, now, partitionMonthsAhead);
    let rawEmptied = 0;
    let months: string[] = [];
    if (rawRetentionMonths > 0) {
      const emptied = await emptyRawBefore(ctx.warehouse, now, rawRetentionMonths, ctx.signal);
      rawEmptied = emptied.emptied;
      months = emptied.months;
    }
    ctx.log.info({ partitionsCreated, rawEmptied, months }, 'warehouse maintained');
    return { partitionsCreated, rawEmptied, months };
  },
});
