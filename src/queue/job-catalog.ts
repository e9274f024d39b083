/**
 * The job catalog's types, gathered from the job files themselves by declaration merging (as Graphile
 * Worker's task map is): each module of jobs/ adds its payload schema and its result to the two
 * interfaces below,
 *
 *     declare module '../src/queue/job-catalog.ts' {
 *       interface JobPayloads { 'users.sync': typeof usersSyncPayload }
 *       interface JobResults { 'users.sync': UsersSyncResult }
 *     }
 *
 * so `ctx.enqueue(name, payload)`, the queue's `enqueue` and the inline runner's results are typed by
 * the catalog without a list anyone has to keep: adding a job is adding its file (jobs/index.ts finds it).
 */
import type { z } from 'zod';
import type { JobContext } from './job-context.ts';
import { defineJobFor, type JobDefinition } from './job-definition.ts';

/** Job name → payload schema; each job file adds its own entry. */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in the job files
export interface JobPayloads {}

/** Job name → what its `run` resolves to; each job file adds its own entry. */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in the job files
export interface JobResults {}

/** The catalog's payloads as a plain object type (an interface has no index signature to satisfy). */
export type CatalogPayloads = { [Name in keyof JobPayloads]: JobPayloads[Name] };

export type JobName = keyof JobPayloads & string;

/** What a job `name` resolves to. */
export type ResultOf<Name extends JobName> = Name extends keyof JobResults ? JobResults[Name] : unknown;

/** What a job of the catalog may touch, its `ctx.enqueue` typed by the catalog. */
export type CatalogJobContext = JobContext<CatalogPayloads>;

/** Every job of the catalog by name. */
export type JobCatalog = {
  [Name in JobName]: JobDefinition<JobPayloads[Name] & z.ZodType, ResultOf<Name>, CatalogPayloads> & {
    name: Name;
  };
};

/** `defineJob` of the catalog's job files: `ctx.enqueue` takes the payload type of the job it names. */
export const defineJob = defineJobFor<CatalogPayloads>();
