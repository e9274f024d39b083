/**
 * What a job may touch: `{ log, warehouse, cursors, org(), signal, attempt, jobId, enqueue, settings,
 * readBudgetPlan(), readPushCap() }`, built by `runtime.jobContext` (src/worker/runtime.ts). Not the whole config: the
 * few values jobs read are `settings` (job-settings.ts). A job never talks HTTP or SQL directly: it
 * composes the org's platform clients, normalization (inside the loader) and the warehouse's named
 * functions (`warehouse`, job-warehouse.ts: the loader's entry points and a few queries, no raw `db`).
 */
import type { z } from 'zod';
import type { OrgBudget } from '../budget/read-budget-plan.ts';
import type { Logger } from '../log/logger.ts';
import type { JobOrg } from './job-org.ts';
import type { JobSettings } from './job-settings.ts';
import type { JobCursors, JobWarehouse } from './job-warehouse.ts';

/**
 * Job name → payload schema: what `enqueue` needs to know of the catalog. job-catalog.ts gathers the real
 * one from the job files (`CatalogPayloads`) and passes it as the type parameter, so src/queue never
 * imports jobs/.
 */
export type PayloadSchemas = Record<string, z.ZodType>;

/**
 * What a caller passes for a job's payload: the schema's input (defaults may be left out); the output
 * when the input says nothing (a `z.preprocess` reads `unknown`).
 */
export type EnqueuePayload<Schema extends z.ZodType> =
  unknown extends z.input<Schema> ? z.output<Schema> : z.input<Schema>;

/**
 * Queue a job by name: the payload's type follows from the name. Still validated against the schema at
 * run time, on enqueue and again on dequeue. False when its deterministic id was queued already.
 * Without a catalog (`PayloadSchemas` itself: the runtime, the queue, tests) any name and payload.
 */
export type EnqueueJob<
  Payloads extends PayloadSchemas = PayloadSchemas,
  Options = EnqueueOptions,
> = string extends keyof Payloads
  ? (name: string, payload: unknown, options?: Options) => Promise<boolean>
  : <Name extends keyof Payloads & string>(
      name: Name,
      payload: EnqueuePayload<Payloads[Name]>,
      options?: Options,
    ) => Promise<boolean>;

export interface EnqueueOptions {
  /** Overrides the priority inherited from the enqueuing job (BullMQ; the inline runner has none). */
  priority?: number;
}

/**
 * `Payloads` is the catalog a job's `enqueue` is typed by. Its default is `any`, not `PayloadSchemas`: the
 * runtime and the queue build contexts without knowing the catalog, and `any` lets such a context be
 * handed to a job of any catalog (with `PayloadSchemas` TypeScript compares the catalogs and refuses).
 */
export interface JobContext<Payloads extends PayloadSchemas = any> {
  /** pino child bound to the job id. */
  log: Logger;
  /** The loader's entry points and the named warehouse functions jobs use (job-warehouse.ts). */
  warehouse: JobWarehouse;
  /** Cursors read through their kinds (src/warehouse/cursors.ts); written with a batch's progress. */
  cursors: JobCursors;
  /** A configured organization's platform clients and the settings jobs read (job-org.ts); throws a ConfigError for an unknown org. */
  org(orgId: string): JobOrg;
  /** Aborted when the process is asked to stop: pass it to every request and check it between batches. */
  signal: AbortSignal;
  /** 1 for the first attempt. */
  attempt: number;
  jobId: string;
  /**
   * Queue another job (validated against its schema); false when its deterministic id was queued already.
   * `priority` overrides the one inherited from this job (BullMQ; the inline runner has no priorities).
   */
  enqueue: EnqueueJob<Payloads>;
  /** The few config values jobs read (job-settings.ts); never the whole config. */
  settings: JobSettings;
  /** The org's request budget plan as of `now` (read-budget-plan.ts, which reads the config jobs do not see). */
  readBudgetPlan(orgId: string, now: number): Promise<OrgBudget>;
  /** The most push may spend per hour (read-budget-plan.ts, `readPushCap`): what push.drain gates on. */
  readPushCap(orgId: string): Promise<number>;
}

/** What running a job needs of the process: a context per execution (built by worker/runtime.ts) and its log. */
export interface JobContextSource {
  jobContext(input: {
    jobId: string;
    attempt: number;
    signal: AbortSignal;
    enqueue: JobContext['enqueue'];
  }): JobContext;
  log: Logger;
}
