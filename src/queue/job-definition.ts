/**
 * The shape of a job module (CONVENTIONS.md, after trigger.dev's worker catalog): a name, a zod payload
 * schema validated on enqueue and again on dequeue, retry options, and `run(ctx, payload)`. The same
 * modules run under BullMQ (`worker`) and under the inline runner (one-shot CLI commands).
 */
import type { z } from 'zod';
import type { JobContext } from './job-context.ts';
import type { RetryOptions } from './job-retries.ts';

/** A row of JOB_RETRIES (job-retries.ts) and a priority of JOB_PRIORITIES (job-priorities.ts). */
export interface JobOptions extends RetryOptions {
  /** Lower runs first (BullMQ semantics): stream and reconciliation work go before backfill. */
  priority?: number;
}

export interface JobDefinition<Schema extends z.ZodType = z.ZodType, Result = unknown> {
  name: string;
  payload: Schema;
  options: JobOptions;
  /** Deterministic id for a payload, so the same unit of work is never queued twice. */
  jobId?: (payload: z.infer<Schema>) => string;
  run(ctx: JobContext, payload: z.infer<Schema>): Promise<Result>;
}

/** Helper that keeps the payload type inferred from the schema at the definition site. */
export function defineJob<Schema extends z.ZodType, Result>(
  definition: JobDefinition<Schema, Result>,
): JobDefinition<Schema, Result> {
  return definition;
}
