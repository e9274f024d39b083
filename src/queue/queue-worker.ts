/**
 * The BullMQ worker of one process: takes jobs of the `jobs` queue, validates their payload again,
 * runs the job module with the context the application builds for it (`runtime.jobContext`; its
 * `enqueue` goes back to BullMQ), tells the hooks how each attempt ended, and maps
 * our error classes onto BullMQ's outcomes:
 *
 * - stopped by a signal mid-job → the job goes back to the queue at once (no attempt spent); the loader's
 *   transaction guarantees nothing half-done was committed;
 * - otherwise `jobRetryDecision` (job-retry-decision.ts, shared with the inline runner): `fail` →
 *   `UnrecoverableError`; `wait` (a 429, an outage) → the job is delayed without spending an attempt,
 *   so an outage of any length is waited out; `retry` → BullMQ retries with the definition's back-off.
 *
 * A SIGKILLed process's jobs are moved back to waiting by another process's stalled-job check after
 * `lockDurationMs` and redone; jobs are idempotent, so redoing one costs requests but never data.
 *
 * Closing while Redis is down: BullMQ's graceful close waits for its blocking connection to end, which
 * never happens while Redis is away (bullmq#4656, open in 6.7), and a running job waits for Redis to
 * take it back. So `close({ redisReachable: false })` drops the connection first (with the runtime's
 * `stopReconnecting`, which its duplicates share, every command it holds fails within seconds) and
 * closes BullMQ by force; the running jobs stay active in Redis, as after a SIGKILL.
 */
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import { toError } from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { dropRedis } from '../runtime/connect-redis.ts';
import { bullmqTelemetry } from '../telemetry/start-tracing.ts';
import { jobAttributes, withSpan } from '../telemetry/tracer.ts';
import type { JobDefinition } from './job-definition.ts';
import type { JobContextSource } from './job-execution.ts';
import { type JobQueue, QUEUE_NAME } from './job-queue.ts';
import { jobRetryDecision } from './job-retry-decision.ts';

/** How an attempt of a job ended, for the hooks: as BullMQ will record it, or `abandoned` by a stop. */
export type JobOutcome = 'completed' | 'failed' | 'retried' | 'delayed' | 'abandoned';

/**
 * What the worker tells whoever watches it (the process's metrics): the framework counts nothing itself.
 * The hooks run inside the attempt, so they must not throw.
 */
export interface QueueWorkerHooks {
  /** A job returned: its validated payload and what it returned, before `jobFinished`. */
  jobCompleted?(name: string, payload: unknown, result: unknown): void;
  /** An attempt ended: how, and how long it ran, in seconds. */
  jobFinished?(name: string, outcome: JobOutcome, seconds: number): void;
}

/** `Context`: what the application builds for each execution (`runtime.jobContext`) and the jobs take. */
export interface QueueWorkerOptions<Context = unknown> {
  runtime: JobContextSource<Context>;
  redis: Redis;
  prefix: string;
  catalog: Record<string, JobDefinition<z.ZodType, unknown, Context>>;
  jobQueue: JobQueue;
  concurrency: number;
  lockDurationMs: number;
  maxStalledCount: number;
  /** The process's stop signal; handed to every job. */
  signal: AbortSignal;
  hooks?: QueueWorkerHooks;
  log: Logger;
  outageDelayMs?: number;
  /** Wait after a transaction conflict that reached the job (job-retry-decision.ts), ms. */
  conflictDelayMs?: number;
}

export interface QueueWorker {
  worker: Worker;
  /**
   * Stops taking jobs and waits for the running ones (which see the aborted signal) to settle; with
   * `redisReachable: false`, stops without waiting for anything Redis would have to answer.
   */
  close(options?: { redisReachable?: boolean }): Promise<void>;
}

export function startQueueWorker<Context>(options: QueueWorkerOptions<Context>): QueueWorker {
  const { catalog, signal, hooks = {}, log } = options;
  // BullMQ needs maxRetriesPerRequest null: commands wait out a Redis restart instead of failing.
  const connection = options.redis.duplicate({ maxRetriesPerRequest: null });

  const processor = async (job: Job, token?: string): Promise<unknown> => {
    const definition = catalog[job.name];
    if (!definition) throw new UnrecoverableError(`unknown job ${job.name}`);
    const parsed = definition.payload.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(`invalid payload for ${job.name}: ${parsed.error.message}`);
    }
    const jobId = String(job.id);
    const ctx = options.runtime.jobContext({
      jobId,
      attempt: job.attemptsMade + 1,
      signal,
      enqueue: (name, payload, extra) =>
        options.jobQueue.enqueue(
          name,
          payload,
          extra?.priority !== undefined
            ? { priority: extra.priority }
            : inheritedPriority(job.opts.priority, catalog[name]),
        ),
    });
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const result = await withSpan(`job ${job.name}`, jobAttributes(jobId, job.attemptsMade + 1), () =>
        definition.run(ctx, parsed.data),
      );
      hooks.jobCompleted?.(job.name, parsed.data, result);
      hooks.jobFinished?.(job.name, 'completed', seconds());
      return result;
    } catch (thrown) {
      const error = toError(thrown);
      if (signal.aborted) {
        // Abandoned by a shutdown: back to the queue for whoever runs next, without spending an attempt.
        await job.moveToDelayed(Date.now(), token);
        hooks.jobFinished?.(job.name, 'abandoned', seconds());
        throw new DelayedError('abandoned by shutdown');
      }
      const decision = jobRetryDecision(error, {
        outageDelayMs: options.outageDelayMs,
        conflictDelayMs: options.conflictDelayMs,
      });
      if (decision.action === 'fail') {
        hooks.jobFinished?.(job.name, 'failed', seconds());
        throw new UnrecoverableError(redactKnownSecrets(error.message));
      }
      if (decision.action === 'wait') {
        const { delayMs, reason } = decision;
        log.warn(
          { job: job.name, jobId, delayMs, err: error },
          `${reason}; job delayed without spending an attempt`,
        );
        await job.moveToDelayed(Date.now() + delayMs, token);
        hooks.jobFinished?.(job.name, 'delayed', seconds());
        throw new DelayedError(reason);
      }
      const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      hooks.jobFinished?.(job.name, last ? 'failed' : 'retried', seconds());
      throw new Error(redactKnownSecrets(error.message));
    }
  };

  const worker = new Worker(QUEUE_NAME, processor, {
    telemetry: bullmqTelemetry(),
    connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.lockDurationMs,
    maxStalledCount: options.maxStalledCount,
    autorun: true,
  });
  let lastErrorLog = 0;
  worker.on('error', (error) => {
    // Redis away: BullMQ keeps retrying; log at most every 5 s.
    if (Date.now() - lastErrorLog < 5000) return;
    lastErrorLog = Date.now();
    log.warn({ err: error }, 'queue worker error (Redis unreachable?); retrying');
  });
  worker.on('failed', (job, error) => {
    if (!job || error instanceof DelayedError || error.name === 'DelayedError') return;
    const final = error instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
    log[final ? 'error' : 'warn'](
      { job: job.name, jobId: job.id, attempt: job.attemptsMade, err: error },
      final ? 'job failed for good' : 'job failed, will retry',
    );
  });
  worker.on('stalled', (jobId) => log.warn({ jobId }, 'job stalled (its process died?); it will be redone'));

  return {
    worker,
    async close({ redisReachable = true } = {}) {
      if (!redisReachable) dropRedis(connection);
      await worker
        .close(!redisReachable)
        .catch((error) => log.warn({ err: error }, 'closing the queue worker'));
      connection.disconnect();
    },
  };
}

/**
 * Fan-out inherits its parent's priority when that is more urgent: a records.poll (20) queued by a job
 * of priority 12 runs at 12, by a backfill (30) at 20. A job may set its fan-out's priority instead
 * (records.recent: 11 for active users' polls, 12 for dormant ones').
 */
export function inheritedPriority(
  parent: number | undefined,
  child: JobDefinition | undefined,
): { priority?: number } {
  const own = child?.priority;
  if (parent === undefined || parent <= 0) return {};
  return { priority: own === undefined ? parent : Math.min(parent, own) };
}
