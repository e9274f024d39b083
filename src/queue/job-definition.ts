/**
 * The shape of a job module (after trigger.dev's and Graphile Worker's task catalogs): a name, a zod payload
 * schema validated on enqueue and again on dequeue, retry options, and `run(ctx, payload)`. The same
 * modules run under BullMQ (`worker`) and under the inline runner (one-shot CLI commands).
 */
import type { z } from 'zod';
import type { JobContext, PayloadSchemas } from './job-context.ts';
import type { RetryOptions } from './job-retries.ts';

/** A row of JOB_RETRIES (job-retries.ts) and a priority of JOB_PRIORITIES (job-priorities.ts). */
export interface JobOptions extends RetryOptions {
  /** Lower runs first (BullMQ semantics): stream and reconciliation work go before backfill. */
  priority?: number;
}

export interface JobDefinition<
  Schema extends z.ZodType = z.ZodType,
  Result = unknown,
  Payloads extends PayloadSchemas = any,
> {
  name: string;
  payload: Schema;
  options: JobOptions;
  /**
   * Deterministic id for a payload (jobKey(), job-key.ts), so the same unit of work is never queued
   * twice; undefined for a payload that has none.
   */
  jobId?: (payload: z.infer<Schema>) => string | undefined;
  run(ctx: JobContext<Payloads>, payload: z.infer<Schema>): Promise<Result>;
}

/**
 * `defineJob` for a catalog of payloads: its jobs' `ctx.enqueue` is typed by that catalog
 * (jobs/define-job.ts: `defineJobFor<JobPayloads>()`). Keeps the name literal and the payload type
 * inferred from the schema at the definition site.
 */
export function defineJobFor<Payloads extends PayloadSchemas>() {
  return <const Name extends string, Schema extends z.ZodType, Result>(
    definition: JobDefinition<Schema, Result, Payloads> & { name: Name },
  ): JobDefinition<Schema, Result, Payloads> & { name: Name } => definition;
}

/** A job whose `ctx.enqueue` knows no catalog (tests, ad-hoc jobs): any name, payload checked at run time. */
export const defineJob = defineJobFor<PayloadSchemas>();
