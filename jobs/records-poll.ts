/**
 * records.poll: one user × resource × window (≤ 30 days). One request brings the window's records; they
 * are loaded with the ledger entry of the window (when part of a backfill run) in one transaction, so a
 * resumed backfill skips exactly the windows whose data is committed.
 */
import { z } from 'zod';
import { applyBatch } from '../src/warehouse/apply-batch.ts';
import type { LoadResult } from '../src/warehouse/batch.ts';
import { finishRunIfComplete } from '../src/warehouse/finish-run-if-complete.ts';
import { defineJob } from './job-definition.ts';

const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD');

export const recordsPollPayload = z.object({
  orgId: z.string().min(1),
  uid: z.string().min(1),
  resource: z.string().min(1),
  startDate: isoDate,
  endDate: isoDate,
  /** The backfill run and ledger window this poll completes, if any. */
  runId: z.string().optional(),
  windowKey: z.string().optional(),
});
export type RecordsPollPayload = z.infer<typeof recordsPollPayload>;

export interface RecordsPollResult extends LoadResult {
  records: number;
}

export const recordsPoll = defineJob({
  name: 'records.poll',
  payload: recordsPollPayload,
  options: { attempts: 5, backoff: { type: 'exponential', delay: 2000 }, priority: 20 },
  jobId: (p) =>
    ['records.poll', p.orgId, p.uid, p.resource, p.startDate, p.endDate, p.runId ?? '']
      .map(encodeURIComponent)
      .join('|'),
  async run(ctx, payload): Promise<RecordsPollResult> {
    const { v2 } = ctx.org(payload.orgId);
    const records = await v2.fetchRecords({
      uid: payload.uid,
      resource: payload.resource,
      startDate: payload.startDate,
      endDate: payload.endDate,
      signal: ctx.signal,
    });
    const windows =
      payload.runId && payload.windowKey
        ? [{ runId: payload.runId, windowKey: payload.windowKey, records: records.length, requests: 1 }]
        : [];
    const loaded = await applyBatch(
      ctx.warehouse,
      {
        orgId: payload.orgId,
        arrivedVia: 'poll',
        items: records.map((raw) => ({ kind: 'record' as const, raw })),
      },
      {
        windows,
        cursors: [
          {
            key: `poll:${payload.uid}:${payload.resource}`,
            value: { startDate: payload.startDate, endDate: payload.endDate, at: new Date().toISOString() },
          },
        ],
      },
      { log: ctx.log },
    );
    if (payload.runId) await finishRunIfComplete(ctx.warehouse.db, payload.runId);
    return { ...loaded, records: records.length };
  },
});
