/**
 * Runs job modules in this process for a one-shot command: an InlineRunner whose jobs get contexts cut
 * from the runtime, and whose fan-out (`ctx.enqueue`) lands in the same runner.
 */
import { jobCatalog } from '../../jobs/index.ts';
import { classifyFailure } from '../errors/index.ts';
import { type InlineJob, InlineRunner } from '../queue/inline-runner.ts';
import type { CatalogPayloads, JobName, ResultOf } from '../queue/job-catalog.ts';
import type { JobDefinition } from '../queue/job-definition.ts';
import { redactedMessage } from '../redact/redact-secrets.ts';
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
  // A one-shot command reports what failed itself, once, with its fix: these lines say what happens
  // meanwhile, with the reason and without a stack (which LOG_LEVEL=debug adds), and nothing once the
  // run is stopping.
  const why = (error: Error) =>
    runtime.log.isLevelEnabled('debug') ? { err: error } : { reason: redactedMessage(error) };
  const warn = (job: InlineJob, error: Error, delayMs: number, message: string) =>
    signal.aborted ||
    runtime.log.warn({ job: job.name, jobId: job.id, attempt: job.attempt, delayMs, ...why(error) }, message);
  runner.on('retrying', (job, error, delayMs) => warn(job, error, delayMs, 'job failed, retrying'));
  runner.on('waiting', (job, error, delayMs) =>
    warn(
      job,
      error,
      delayMs,
      `job waits ${Math.round(delayMs / 1000)} s without spending an attempt: ${waitReason(error)}`,
    ),
  );
  runner.on('failed', (job, error) =>
    runtime.log.debug({ job: job.name, jobId: job.id, err: error }, 'job failed'),
  );
  return runner;
}

function waitReason(error: Error): string {
  switch (classifyFailure(error).kind) {
    case 'rate-limited':
      return 'the platform asked for a pause (429)';
    case 'conflict':
      return 'the transaction lost a race with another (deadlock or serialization failure)';
    default:
      return 'a service did not answer (the platform, PostgreSQL or Redis)';
  }
}
