/**
 * The two job runners (BullMQ's worker against real Redis, and the inline runner of one-shot commands)
 * handle a failure the same way, because both ask `jobRetryDecision` (classifyFailure): a 429, a
 * database outage and a transaction conflict (deadlock, serialization failure) are waited out without
 * spending an attempt, a PermanentError fails at once, and any other error spends an attempt. Every job
 * here has ONE attempt, so a spent attempt fails it for good.
 */
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineUncatalogedJob, type JobContext } from '../../jobs/job-context.ts';
import { PermanentError, RateLimitedError } from '../../src/errors/index.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { InlineRunner } from '../../src/queue/inline-runner.ts';
import type { JobDefinition } from '../../src/queue/job-definition.ts';
import { type JobQueue, openJobQueue } from '../../src/queue/job-queue.ts';
import type { QueueWorker } from '../../src/queue/queue-worker.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';
import { startTestQueueWorker } from '../helpers/queue-worker.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';

/** Each key fails this many times, then succeeds. */
const FAILURES: Record<string, { times: number; error: () => Error }> = {
  limited: {
    times: 2,
    error: () =>
      new RateLimitedError(
        { method: 'GET', url: 'http://x/', status: 429, bodyExcerpt: '', messages: [], retryable: true },
        20,
      ),
  },
  'database outage': {
    times: 2,
    error: () =>
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
  },
  'transaction conflict': {
    times: 2,
    error: () =>
      new Error('load failed', {
        cause: Object.assign(new Error('deadlock detected'), { code: '40P01' }),
      }),
  },
  permanent: { times: 9, error: () => new PermanentError('the same call fails the same way') },
  flaky: { times: 1, error: () => new Error('something else') },
};

/** Runs per key and whether each job ended completed or failed. */
interface Outcome {
  runs: Record<string, number[]>;
  ended: Record<string, 'completed' | 'failed'>;
}

function catalogFor(runs: Record<string, number[]>): Record<string, JobDefinition> {
  const once = defineUncatalogedJob({
    name: 'test.once',
    payload: z.object({ key: z.string() }),
    priority: 0,
    retry: { attempts: 1, backoff: { type: 'exponential', delay: 10 } },
    jobId: (p) => `test.once|${p.key}`,
    async run(ctx, payload) {
      const attempts = runs[payload.key] ?? [];
      runs[payload.key] = [...attempts, ctx.attempt];
      const failure = FAILURES[payload.key]!;
      if (attempts.length < failure.times) throw failure.error();
      return 'done';
    },
  });
  return { [once.name]: once } as Record<string, JobDefinition>;
}

function context(input: { jobId: string; attempt: number; signal: AbortSignal }): JobContext {
  return { ...input, log: silentLogger, enqueue: async () => false } as unknown as JobContext;
}

const expected: Outcome = {
  runs: {
    limited: [1, 1, 1],
    'database outage': [1, 1, 1],
    'transaction conflict': [1, 1, 1],
    permanent: [1],
    flaky: [1],
  },
  ended: {
    limited: 'completed',
    'database outage': 'completed',
    'transaction conflict': 'completed',
    permanent: 'failed',
    flaky: 'failed',
  },
};

describe('both job runners treat a 429, a database outage and a transaction conflict the same way', () => {
  let testRedis: TestRedis;
  let redis: Redis;
  let jobQueue: JobQueue | undefined;
  let worker: QueueWorker | undefined;
  let stop: AbortController;

  beforeEach(() => {
    stop = new AbortController();
    testRedis = createTestRedis('runners-agree');
    redis = testRedis.connect();
  });
  afterEach(async () => {
    stop.abort();
    await worker?.close();
    await jobQueue?.close();
    await testRedis.cleanup();
  });

  it('the inline runner', async () => {
    const runs: Record<string, number[]> = {};
    const runner = new InlineRunner({
      catalog: catalogFor(runs),
      concurrency: 2,
      clock: createManualClock(),
      execute: (definition, job, signal) =>
        definition.run(context({ jobId: job.id, attempt: job.attempt, signal }), job.payload),
    });
    const ended: Outcome['ended'] = {};
    runner.on('completed', (job) => {
      ended[(job.payload as { key: string }).key] = 'completed';
    });
    runner.on('failed', (job) => {
      ended[(job.payload as { key: string }).key] = 'failed';
    });
    for (const key of Object.keys(FAILURES)) runner.enqueue('test.once', { key });
    await runner.drain();
    expect({ runs, ended }).toEqual(expected);
  });

  it('the BullMQ worker', async () => {
    const runs: Record<string, number[]> = {};
    const catalog = catalogFor(runs);
    const prefix = testRedis.prefix.slice(0, -1);
    jobQueue = openJobQueue({ redis, prefix, catalog, keep: { keepCompleted: 10, keepFailed: 10 } });
    worker = startTestQueueWorker({
      runtime: { log: silentLogger, jobContext: context },
      redis,
      prefix,
      catalog,
      jobQueue,
      signal: stop.signal,
      outageDelayMs: 20,
      conflictDelayMs: 20,
    });
    for (const key of Object.keys(FAILURES)) await jobQueue.enqueue('test.once', { key });
    const ended: Outcome['ended'] = {};
    await vi.waitFor(
      async () => {
        for (const key of Object.keys(FAILURES)) {
          const state = await jobQueue!.queue.getJobState(`test.once|${key}`);
          if (state === 'failed') ended[key] = 'failed';
          // Completed jobs with a deterministic id are removed from Redis.
          else if (state === 'unknown' && runs[key]?.length) ended[key] = 'completed';
        }
        expect(ended).toEqual(expected.ended);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(runs).toEqual(expected.runs);
  });
});
