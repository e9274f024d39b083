/**
 * The job catalog: every job module of this folder, found by reading the folder (as Graphile Worker reads
 * its task directory), so adding a job is adding its file. A job file exports its `defineJob(…)`
 * (job-context.ts) and adds its payload and result to the catalog's types (src/queue/job-catalog.ts).
 * The other modules here define no job: job-context.ts is what every job is given, job-schedule.ts
 * where each stands in the queue. The worker
 * registers the jobs with BullMQ; one-shot commands run them through the inline runner.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { JobCatalog } from '../src/queue/job-catalog.ts';
import type { JobDefinition } from '../src/queue/job-definition.ts';
import type { CatalogJobContext } from './job-context.ts';

/** A module's export is a job definition when it has the definition's shape. */
function isJobDefinition(value: unknown): value is JobDefinition {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<JobDefinition>;
  return (
    typeof v.name === 'string' &&
    typeof v.run === 'function' &&
    typeof v.priority === 'number' &&
    v.payload !== undefined
  );
}

/** Every job definition exported by the modules of `dir` (this file's own extension: .ts from source, .js built). */
export async function loadJobCatalog(dir: string, extension: string): Promise<Record<string, JobDefinition>> {
  const catalog: Record<string, JobDefinition> = {};
  const files = readdirSync(dir)
    .filter(
      (name) => name.endsWith(extension) && !name.endsWith(`.d${extension}`) && name !== `index${extension}`,
    )
    .sort();
  for (const file of files) {
    const module: Record<string, unknown> = await import(pathToFileURL(path.join(dir, file)).href);
    for (const value of Object.values(module)) {
      if (!isJobDefinition(value)) continue;
      const other = catalog[value.name];
      if (other && other !== value)
        throw new Error(`two jobs are named ${value.name} (jobs/${file} and another file)`);
      catalog[value.name] = value;
    }
  }
  return catalog;
}

const here = import.meta.filename;

export const jobCatalog = (await loadJobCatalog(
  path.dirname(here),
  path.extname(here),
)) as JobCatalog<CatalogJobContext>;
