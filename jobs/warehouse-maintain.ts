/**
 * warehouse.maintain: the monthly partitions' upkeep (src/warehouse/warehouse-upkeep.ts). Creates the
 * partitions of this month and the next `warehouse.partitionMonthsAhead`, and, when
 * `warehouse.rawRetentionMonths` is set, empties `raw` of older months. Scheduled by the worker every
 * `warehouse.maintainMinutes` (default daily); idempotent, so a retry or a second replica's run is harmless.
 */
import { z } from 'zod';
import { createPartitionsAhead, emptyRawBefore } from '../src/warehouse/warehouse-upkeep.ts';
import { defineJob } from './job-definition.ts';

export const warehouseMaintainPayload = z.object({});

export const warehouseMaintain = defineJob({
  name: 'warehouse.maintain',
  payload: warehouseMaintainPayload,
  options: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 }, priority: 50 },
  jobId: () => 'warehouse.maintain',
  async run(ctx): Promise<{ partitionsCreated: number; rawEmptied: number; months: string[] }> {
    const now = new Date();
    const { partitionMonthsAhead, rawRetentionMonths } = ctx.config.warehouse;
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
