/**
 * What the framework hands one execution of a job (`JobExecution`), and what it asks of the application
 * to run one (`JobContextSource`): a context of the application's own type, built from the execution.
 * The framework never sees inside that context; it passes it to the job's `run(ctx, payload)`.
 */
import type { Logger } from '../log/logger.ts';
import type { EnqueueJob, PayloadSchemas } from './enqueue-job.ts';

/**
 * One execution of a job as the runner knows it: its id, its attempt, the stop signal, and an `enqueue`
 * that goes back to the same runner. An application's context carries these alongside its own parts.
 * `Payloads`: the catalog `enqueue` is typed by (any name and payload without one).
 */
export interface JobExecution<Payloads extends PayloadSchemas = PayloadSchemas> {
  jobId: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** Aborted when the process is asked to stop: pass it to every request and check it between batches. */
  signal: AbortSignal;
  /**
   * Queue another job (validated against its schema); false when its deterministic id was queued already.
   * `priority` overrides the one inherited from this job (BullMQ; the inline runner has no priorities).
   */
  enqueue: EnqueueJob<Payloads>;
}

/** What running a job needs of the process: a context per execution, of the application's type, and its log. */
export interface JobContextSource<Context> {
  jobContext(execution: JobExecution): Context;
  log: Logger;
}
