/**
 * `enqueue` typed by a catalog of payload schemas: the payload's type follows from the job's name. The
 * queue, both runners and every job's context share this one shape.
 */
import type { z } from 'zod';

/**
 * Job name → payload schema: what `enqueue` needs to know of a catalog. The application passes its own
 * (job-catalog.ts, `CatalogPayloads`) as the type parameter, so src/queue never imports it.
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
