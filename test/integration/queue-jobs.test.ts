/**
 * The BullMQ queue and worker against real Redis: payloads validated on enqueue and dequeue,
 * deterministic ids, options from the definition, and the mapping of our errors onto BullMQ outcomes
 * (PermanentError → no retry, RateLimitedError → delayed without spending an attempt, outage → delayed,
 * a stop mid-job → back to the queue).
 */
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineUncatalogedJob, type JobContext } from '../../jobs/job-context.ts';
import { PermanentError, RateLimitedError } from '../../src/errors/index.ts';
import { silentLogger } from '../../src/log/logger.ts';
import type { JobDefinition } from '../../src/queue/job-definition.ts';
import { type JobQueue, openJobQueue } from '../../src/queue/job-queue.ts';
import type { QueueWorker } from '../../src/queue/queue-worker.ts';
import type { Runtime } from '../../src/worker/runtime.ts';
import { startTestQueueWorker } from '../helpers/queue-worker.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';

const keep = { keepCompleted: 10, keepFailed: 10 };

interface Behaviour {
  runs: { key: string; attempt: number; jobId: string }[];
  /** What the job does on each run, by key. */
  act: (key: string, attempt: number, ctx: JobContext) => Promise<unknown>;
}

function catalogFor(behaviour: Behaviour): Record<string, JobDefinition> {
  const echo = defineUncatalogedJob({
    name: 'test.echo',
    payload: z.object({ key: z.string().min(1), n: z.number().int().default(1) }),
    priority: 7,
    retry: { attempts: 3, backoff: { type: 'exponential', delay: 50 } },
    jobId: (p) => `test.echo|${p.key}:x`,
    async run(ctx, payload) {
      behaviour.runs.push({ key: payload.key, attempt: ctx.attempt, jobId: ctx.jobId });
      return behaviour.act(payload.key, ctx.attempt, ctx);
    },
  });
  const free = defineUncatalogedJob({
    name: 'test.free',
    payload: z.object({ key: z.string() }),
    priority: 0,
    retry: { attempts: 1, backoff: { type: 'exponential', delay: 50 } },
    async run(ctx, payload) {
      behaviour.runs.push({ key: payload.key, attempt: ctx.attempt, jobId: ctx.jobId });
      return behaviour.act(payload.key, ctx.attempt, ctx);
    },
  });
  return { [echo.name]: echo, [free.name]: free } as Record<string, JobDefinition>;
}

function fakeRuntime(): Pick<Runtime, 'jobContext' | 'log'> {
  return {
    log: silentLogger,
    jobContext: (input) =>
      ({
        ...input,
        log: silentLogger,
        warehouse: undefined as never,
        cursors: undefined as never,
        org: () => {
          throw new Error('no orgs in this test');
        },
        settings: undefined as never,
        runHolder: 'test',
        platformClock: undefined as never,
        readBudgetPlan: () => {
          throw new Error('no orgs in this test');
        },
        readPushCap: () => {
          throw new Error('no orgs in this test');
        },
      }) as JobContext,
  };
}

describe('job queue and worker', () => {
  let testRedis: TestRedis;
  let redis: Redis;
  let prefix: string;
  let behaviour: Behaviour;
  let catalog: Record<string, JobDefinition>;
  let jobQueue: JobQueue;
  let worker: QueueWorker | undefined;
  let stop: AbortController;

  beforeEach(() => {
    testRedis = createTestRedis('queue-jobs');
    redis = testRedis.connect();
    prefix = testRedis.prefix.slice(0, -1);
    behaviour = { runs: [], act: async () => 'ok' };
    catalog = catalogFor(behaviour);
    jobQueue = openJobQueue({ redis, prefix, catalog, keep });
    stop = new AbortController();
  });
  afterEach(async () => {
    stop.abort();
    await worker?.close();
    worker = undefined;
    await jobQueue.close();
    await testRedis.cleanup();
  });

  const startWorker = (outageDelayMs = 100) => {
    worker = startTestQueueWorker({
      runtime: fakeRuntime(),
      redis,
      prefix,
      catalog,
      jobQueue,
      signal: stop.signal,
      outageDelayMs,
    });
    return worker;
  };

  it('validates before adding, dedupes deterministic ids, and takes options from the definition', async () => {
    await expect(jobQueue.enqueue('test.echo', { key: '' })).rejects.toThrow();
    await expect(jobQueue.enqueue('nope', {})).rejects.toThrow(/unknown job nope/);
    expect(await jobQueue.counts()).toMatchObject({ waiting: 0, prioritized: 0 });

    expect(await jobQueue.enqueue('test.echo', { key: 'a' })).toBe(true);
    expect(await jobQueue.enqueue('test.echo', { key: 'a' })).toBe(false);
    const job = await jobQueue.queue.getJob('test.echo|a%3Ax');
    expect(job?.opts).toMatchObject({ attempts: 3, priority: 7, removeOnComplete: true });
    // Defaults of the schema are applied before the payload reaches Redis.
    expect(job?.data).toEqual({ key: 'a', n: 1 });
  });

  it('runs jobs, and validates the payload again on dequeue', async () => {
    await jobQueue.enqueue('test.echo', { key: 'ok' });
    // Written around enqueue, as an older release or a hand-made job would.
    await jobQueue.queue.add('test.echo', { key: 42 }, { jobId: 'bad-payload', attempts: 3 });
    startWorker();
    await vi.waitFor(async () => expect(await jobQueue.queue.getJobState('bad-payload')).toBe('failed'));
    const bad = await jobQueue.queue.getJob('bad-payload');
    expect(bad?.failedReason).toMatch(/invalid payload/);
    expect(bad?.attemptsMade).toBe(1);
    await vi.waitFor(() => expect(behaviour.runs.map((r) => r.key)).toEqual(['ok']));
    // Completed jobs with a deterministic id leave Redis, so the same unit can be queued again later.
    await vi.waitFor(async () =>
      expect(await jobQueue.queue.getJobState('test.echo|ok%3Ax')).toBe('unknown'),
    );
    expect(await jobQueue.enqueue('test.echo', { key: 'ok' })).toBe(true);
  });

  it('does not retry a PermanentError, retries other errors, and replaces a failed job on re-enqueue', async () => {
    behaviour.act = async (key, attempt) => {
      if (key === 'perm') throw new PermanentError('bad request for good');
      if (key === 'flaky' && attempt < 3) throw new Error('try again');
      return 'done';
    };
    startWorker();
    await jobQueue.enqueue('test.echo', { key: 'perm' });
    await jobQueue.enqueue('test.echo', { key: 'flaky' });
    await vi.waitFor(async () =>
      expect(await jobQueue.queue.getJobState('test.echo|perm%3Ax')).toBe('failed'),
    );
    await vi.waitFor(() => expect(behaviour.runs.filter((r) => r.key === 'flaky')).toHaveLength(3));
    expect(behaviour.runs.filter((r) => r.key === 'perm')).toHaveLength(1);
    expect(behaviour.runs.filter((r) => r.key === 'flaky').map((r) => r.attempt)).toEqual([1, 2, 3]);
    const failed = await jobQueue.failed();
    expect(failed.map((f) => f.name)).toEqual(['test.echo']);

    behaviour.act = async () => 'fixed';
    expect(await jobQueue.enqueue('test.echo', { key: 'perm' })).toBe(true);
    await vi.waitFor(() => expect(behaviour.runs.filter((r) => r.key === 'perm')).toHaveLength(2));
  });

  it('delays a rate-limited job or an outage without spending attempts', async () => {
    let limited = 0;
    let outages = 0;
    behaviour.act = async (key) => {
      if (key === 'limited' && limited++ < 2)
        throw new RateLimitedError(
          { method: 'GET', url: 'http://x/', status: 429, bodyExcerpt: '', messages: [], retryable: true },
          30,
        );
      if (key === 'outage' && outages++ < 3)
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      return 'done';
    };
    startWorker();
    // attempts is 1: any spent attempt would fail these jobs for good.
    await jobQueue.enqueue('test.free', { key: 'limited' });
    await jobQueue.enqueue('test.free', { key: 'outage' });
    await vi.waitFor(() => {
      expect(behaviour.runs.filter((r) => r.key === 'limited')).toHaveLength(3);
      expect(behaviour.runs.filter((r) => r.key === 'outage')).toHaveLength(4);
    });
    await vi.waitFor(async () => expect(await jobQueue.counts()).toMatchObject({ completed: 2, failed: 0 }));
  });

  it('puts a job stopped by shutdown back in the queue, where the next worker finishes it', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    behaviour.act = async (key, _attempt, ctx) => {
      if (key !== 'long') return 'done';
      if (behaviour.runs.length > 1) return 'finished by the second worker';
      started();
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    };
    startWorker();
    await jobQueue.enqueue('test.free', { key: 'long' });
    await running;
    stop.abort();
    await worker!.close();
    const jobs = await jobQueue.queue.getJobs(['delayed', 'waiting', 'prioritized']);
    expect(jobs.map((j) => [j.name, j.attemptsMade])).toEqual([['test.free', 0]]);

    stop = new AbortController();
    startWorker();
    await vi.waitFor(async () => expect(await jobQueue.counts()).toMatchObject({ completed: 1, failed: 0 }));
    expect(behaviour.runs).toHaveLength(2);
  });
});
