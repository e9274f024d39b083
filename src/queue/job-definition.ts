/**
 * The shape of a job module (after trigger.dev's and Graphile Worker's task catalogs): a name, a zod
 * payload schema validated on enqueue and again on dequeue, its priority, its retry class, the
 * deterministic id of a unit of work, and `run(ctx, payload)`. The same modules run under BullMQ
 * (`worker`) and under the inline runner (one-shot CLI commands). Everything a job module is made of is
 * here: the retry classes, the key of a unit of work, the payloads' date fields. The context a job runs
 * with is the application's (`Context`): the framework hands it over and never looks inside.
 */
import { z } from 'zod';

/** Retry options of a job: attempts, including the first, and exponential back-off from `delay` ms. */
export interface RetryOptions {
  /** Total attempts, including the first. */
  attempts: number;
  backoff: { type: 'exponential'; delay: number };
}

/** The retry classes a job picks from, by the kind of work it does, instead of numbers of its own. */
export const JOB_RETRIES = {
  /** A unit of platform fetches and loads (a window, a page run, a record): worth several tries. */
  fetch: { attempts: 5, backoff: { type: 'exponential', delay: 2000 } },
  /** Planning and fan-out (ticks, backfill plans): cheap to redo, and the next schedule tick repeats it. */
  plan: { attempts: 3, backoff: { type: 'exponential', delay: 5000 } },
  /** Housekeeping in Postgres (pruning, partitions): daily, so a minute between tries is fine. */
  housekeeping: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } },
} as const satisfies Record<string, RetryOptions>;

export type RetryClass = keyof typeof JOB_RETRIES;

/**
 * `Context`: what the job's `run` is given, the application's type. Its default is `any`: the queue and
 * the runners hold definitions of any context, and the application hands each the context it built.
 */
export interface JobDefinition<Schema extends z.ZodType = z.ZodType, Result = unknown, Context = any> {
  name: string;
  payload: Schema;
  /**
   * Lower runs first (BullMQ semantics). The order of all jobs, and why, is src/queue/README.md
   * ("Queue and priorities"; test/unit/queue-priorities-readme.test.ts holds the two together).
   */
  priority: number;
  /** A retry class of JOB_RETRIES by name; explicit options only where a test needs its own. */
  retry: RetryClass | RetryOptions;
  /**
   * Deterministic id for a payload (`jobKey` below), so the same unit of work is never queued twice;
   * undefined for a payload that has none.
   */
  jobId?: (payload: z.infer<Schema>) => string | undefined;
  run(ctx: Context, payload: z.infer<Schema>): Promise<Result>;
}

/** The attempts and back-off of a definition: its class's row, or its own options. */
export function retryOptionsOf(definition: Pick<JobDefinition, 'retry'>): RetryOptions {
  return typeof definition.retry === 'string' ? JOB_RETRIES[definition.retry] : definition.retry;
}

/**
 * `defineJob` for jobs of one context type (the application's, jobs/job-context.ts: `defineJob`). Keeps
 * the name literal and the payload type inferred from the schema at the definition site.
 */
export function defineJobFor<Context>() {
  return <const Name extends string, Schema extends z.ZodType, Result>(
    definition: JobDefinition<Schema, Result, Context> & { name: Name },
  ): JobDefinition<Schema, Result, Context> & { name: Name } => definition;
}

/**
 * The deterministic id of a unit of work: the job name and the payload fields that identify it, each
 * URI-encoded and joined with '|' (an absent field is ''), so no field can run into the next. The same
 * key is never queued twice while it waits or runs (job-queue.ts, inline-runner.ts); job-queue.ts
 * escapes the ':' BullMQ reserves.
 */
export function jobKey(name: string, ...parts: (string | undefined)[]): string {
  return [name, ...parts].map((part) => encodeURIComponent(part ?? '')).join('|');
}

/** A payload's calendar day, `YYYY-MM-DD` (UTC days as text: they compare as text). */
export const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD');

/** A payload's ISO 8601 instant, with `Z` or an offset. */
export const isoInstant = z.iso.datetime({ offset: true });
