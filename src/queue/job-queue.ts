/**
 * The one BullMQ queue every job of the catalog goes through (`jobs`, under `redisPrefix`), and the
 * BullMQ options of a job derived from its definition. Priorities inside it put reconciliation and
 * scheduled work before backfill windows. `enqueue` validates the payload against the job's zod schema
 * before anything reaches Redis.
 */
import { type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { PermanentError } from '../errors/index.ts';
import { dropRedis } from '../runtime/connect-redis.ts';
import { bullmqTelemetry } from '../telemetry/start-tracing.ts';
import type { EnqueueJob, PayloadSchemas } from './enqueue-job.ts';
import { type JobDefinition, retryOptionsOf } from './job-definition.ts';

export const QUEUE_NAME = 'jobs';

/** The BullMQ states whose counts `counts()` gives, in the order `status` shows them. */
const COUNTED_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'failed', 'completed'] as const;
/** The queue's jobs by state (BullMQ's states): what `status` and the metrics show. */
export type JobCounts = Record<(typeof COUNTED_STATES)[number], number>;

/** A job that failed for good, as the queue keeps it (`worker.keepFailed`). */
export interface FailedJobInfo {
  id: string;
  name: string;
  failedReason: string;
  attemptsMade: number;
  finishedOn: number | undefined;
}

export interface QueueEnqueueOptions {
  delayMs?: number;
  priority?: number;
}

/**
 * `Payloads`: the catalog `enqueue` is typed by (start-worker.ts passes jobs/' `CatalogPayloads`). Its default
 * is `any`, as for the application's job context: the framework (worker, stream supervisor, push) passes names it does not
 * know statically, and a typed queue can be handed to it.
 */
export interface JobQueue<Payloads extends PayloadSchemas = any> {
  readonly queue: Queue;
  /**
   * Validates and queues a job (the payload's type follows from the name); false when a job with the same
   * deterministic id is already waiting, delayed or running. A failed (or retained completed) job with
   * that id is replaced, so re-running a backfill retries the windows that failed for good.
   */
  enqueue: EnqueueJob<Payloads, QueueEnqueueOptions>;
  counts(): Promise<JobCounts>;
  failed(limit?: number): Promise<FailedJobInfo[]>;
  /** `redisReachable: false` (a stop during an outage): drop the connection instead of a goodbye that waits for Redis. */
  close(options?: { redisReachable?: boolean }): Promise<void>;
}

export interface OpenJobQueueOptions {
  /** A connection of this process; the queue uses its own duplicate. */
  redis: Redis;
  prefix: string;
  catalog: Record<string, JobDefinition>;
  keep: KeepJobs;
}

/** `Payloads`: the catalog's payload schemas, when the caller knows them (`openJobQueue<CatalogPayloads>`). */
export function openJobQueue<Payloads extends PayloadSchemas = any>(
  options: OpenJobQueueOptions,
): JobQueue<Payloads> {
  // BullMQ needs maxRetriesPerRequest null: commands wait out a Redis restart instead of failing.
  const connection = options.redis.duplicate({ maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE_NAME, { connection, prefix: options.prefix, telemetry: bullmqTelemetry() });
  // Without a listener an 'error' event would crash the process; ioredis reconnects by itself.
  queue.on('error', () => {});
  const enqueue = async (name: string, payload: unknown, extra?: QueueEnqueueOptions): Promise<boolean> => {
    const definition = options.catalog[name];
    if (!definition) throw new PermanentError(`unknown job ${name}`);
    const parsed = definition.payload.parse(payload);
    const opts = jobOptions(definition, parsed, options.keep, extra);
    if (opts.jobId) {
      const state = await queue.getJobState(opts.jobId);
      if (state === 'failed' || state === 'completed') await queue.remove(opts.jobId);
      else if (state !== 'unknown') return false;
    }
    await queue.add(name, parsed, opts);
    return true;
  };
  return {
    queue,
    enqueue: enqueue as EnqueueJob<Payloads, QueueEnqueueOptions>,
    async counts() {
      const c = await queue.getJobCounts(...COUNTED_STATES);
      return Object.fromEntries(COUNTED_STATES.map((state) => [state, c[state] ?? 0])) as JobCounts;
    },
    async failed(limit = 10) {
      const jobs = await queue.getFailed(0, Math.max(0, limit - 1));
      return jobs.map((job) => ({
        id: String(job.id),
        name: job.name,
        failedReason: job.failedReason,
        attemptsMade: job.attemptsMade,
        finishedOn: job.finishedOn,
      }));
    },
    async close({ redisReachable = true } = {}) {
      if (!redisReachable) dropRedis(connection);
      await queue.close().catch(() => {});
      connection.disconnect();
    },
  };
}

/**
 * BullMQ options of one job, derived from its definition (pure). Jobs with a deterministic id are removed
 * from Redis once they complete: the id only has to keep the same unit of work from being queued twice
 * while it waits or runs; what is done for good is remembered in Postgres (ledger, cursors), and a later
 * schedule tick must be able to queue the same window again.
 */
export interface KeepJobs {
  /** Completed jobs without a deterministic id kept for inspection. */
  keepCompleted: number;
  /** Failed jobs kept (for at most 7 days). */
  keepFailed: number;
}

const DAY_S = 86_400;

/** BullMQ rejects ':' in custom ids (it separates key parts); definitions use '|'. */
export function toBullJobId(id: string): string {
  return id.replaceAll(':', '%3A');
}

export function jobOptions(
  definition: JobDefinition,
  payload: unknown,
  keep: KeepJobs,
  extra: { delayMs?: number; priority?: number } = {},
): JobsOptions {
  const key = definition.jobId?.(payload);
  const id = key === undefined ? undefined : toBullJobId(key);
  const priority = extra.priority ?? definition.priority;
  const retry = retryOptionsOf(definition);
  return {
    ...(id ? { jobId: id } : {}),
    attempts: retry.attempts,
    backoff: retry.backoff,
    priority,
    ...(extra.delayMs ? { delay: extra.delayMs } : {}),
    removeOnComplete: id ? true : { count: keep.keepCompleted, age: DAY_S },
    removeOnFail: { count: keep.keepFailed, age: 7 * DAY_S },
  };
}
