/**
 * Runs job modules in this process for a one-shot command: an InlineRunner whose jobs get contexts cut
 * from the runtime, and whose fan-out (`ctx.enqueue`) lands in the same runner.
 */
import { jobCatalog } from '../../jobs/index.ts';
import { type InlineJob, InlineRunner } from '../queue/inline-runner.ts';
import type { CatalogPayloads, JobName, ResultOf } from '../queue/job-catalog.ts';
import type { JobDefinition } from '../queue/job-definition.ts';
import { jobAttributes, withSpan } from '../telemetry/tracer.ts';
import type { Runtime } from './runtime.ts';

/** An inline runner of this catalog: `enqueue(name, payload)` takes the payload type of the job it names. */
export type CatalogInlineRunner = InlineRunner<CatalogPayloads>;

/**
 * A completed job's result typed by the catalog when the job is `name` (what its `run` resolves to),
 * else undefined: what a command's `completed` listener reads a result through.
 */
export function resultOf<Name extends JobName>(
  name: Name,
  job: InlineJob,
  result: unknown,
): ResultOf<Name> | undefined {
  return job.name === name ? (result as ResultOf<Name>) : undefined;
}

export function createInlineRunner(
  runtime: Runtime,
  signal: AbortSignal,
  concurrency: number,
): CatalogInlineRunner {
  const runner: CatalogInlineRunner = new InlineRunner<CatalogPayloads>({
    catalog: jobCatalog as Record<string, JobDefinition>,
    concurrency,
    signal,
    execute: (definition, job, jobSignal) =>
      withSpan(`job ${job.name}`, jobAttributes(job.id, job.attempt), () =>
        definition.run(
          runtime.jobContext({
            jobId: job.id,
            attempt: job.attempt,
            signal: jobSignal,
            // The runtime's contexts know no catalog; the runner checks name and payload when they arrive.
            enqueue: async (name, payload) => (runner as InlineRunner).enqueue(name, payload),
          }),
          job.payload,
        ),
      ),
  });
  runner.on('retrying', (job, error, delayMs) =>
    runtime.log.warn(
      { job: job.name, jobId: job.id, attempt: job.attempt, delayMs, err: error },
      'job failed, retrying',
    ),
  );
  runner.on('waiting', (job, error, delayMs) =>
    runtime.log.warn(
      { job: job.name, jobId: job.id, attempt: job.attempt, delayMs, err: error },
      'job waits (rate limited or a service is unreachable) without spending an attempt',
    ),
  );
  runner.on('failed', (job, error) =>
    runtime.log.error({ job: job.name, jobId: job.id, err: error }, 'job failed'),
  );
  return runner;
}
