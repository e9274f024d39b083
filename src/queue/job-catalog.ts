/**
 * The job catalog's types, gathered from the job files themselves by declaration merging (as Graphile
 * Worker's task map is): each module of jobs/ adds its payload schema and its definition to `Jobs`,
 *
 *     declare module '../src/queue/job-catalog.ts' {
 *       interface Jobs { 'users.sync': { payload: typeof usersSyncPayload; job: typeof usersSync } }
 *     }
 *
 * so `ctx.enqueue(name, payload)`, the queue's `enqueue` and the inline runner's results are typed by
 * the catalog without a list anyone has to keep: adding a job is adding its file (jobs/index.ts finds it).
 * The framework declares the catalog empty; only the application's job files fill it.
 */
import type { z } from 'zod';
import type { JobDefinition } from './job-definition.ts';

/**
 * Job name → its payload schema and its definition; each job file adds its own entry. (The payload is its
 * own member because the definition's type depends on the catalog's payloads: read from the definition,
 * it would be circular.)
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in the job files
export interface Jobs {}

/** The catalog's payload schemas by job name (a plain object type, which `PayloadSchemas` accepts). */
export type CatalogPayloads = { [Name in keyof Jobs]: Jobs[Name]['payload'] };

export type JobName = keyof Jobs & string;

/** What a job `name` resolves to. */
export type ResultOf<Name extends JobName> = Awaited<ReturnType<Jobs[Name]['job']['run']>>;

/** Every job of the catalog by name; `Context` is what their `run` is given (the application's). */
export type JobCatalog<Context> = {
  [Name in JobName]: JobDefinition<CatalogPayloads[Name] & z.ZodType, ResultOf<Name>, Context> & {
    name: Name;
  };
};
