/**
 * A worker's stop that does not end says what it still waits for: here a job that finishes only when
 * the test lets it (as a job stuck in a call without a timeout would), so the stop waits on "the running
 * jobs", logs that while it waits, and ends once the job does.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineUncatalogedJob } from '../../jobs/job-context.ts';
import type { JobDefinition } from '../../src/queue/job-definition.ts';
import type { JobQueue } from '../../src/queue/job-queue.ts';
import { startWorker } from '../../src/worker/start-worker.ts';
import { captureLog } from '../helpers/capture-log.ts';
import { sandboxWorkerConfig } from '../helpers/sandbox-organization.ts';
import { useSandbox, useTestRedis } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

describe('a worker stop that waits', () => {
  const sandbox = useSandbox({ seed: 3, users: 1, days: 1 });
  const db = useTestDatabase();
  const testRedis = useTestRedis('worker-stop');

  it('logs the step it waits for until that step ends', async () => {
    let started = false;
    let finish: () => void = () => {};
    const stuck = defineUncatalogedJob({
      name: 'test.stuck',
      payload: z.object({}),
      priority: 1,
      retry: { attempts: 1, backoff: { type: 'exponential', delay: 50 } },
      async run() {
        started = true;
        await new Promise<void>((resolve) => {
          finish = resolve;
        });
        return 'done';
      },
    });
    const { log, lines } = captureLog('info');
    const config = sandboxWorkerConfig(sandbox, db.url, testRedis, { schedules: { enabled: false } });
    const worker = await startWorker(config, log, new AbortController().signal, {
      catalog: { [stuck.name]: stuck } as Record<string, JobDefinition>,
      stopReportMs: 100,
    });
    // The worker's queue is typed by the real catalog; this test's job is not in it.
    await (worker.jobQueue as JobQueue).enqueue('test.stuck', {});
    await waitForStep('the stuck job to start', () => expect(started).toBe(true), { timeout: 20_000 });

    let stopped = false;
    const stopping = worker.stop().then(() => {
      stopped = true;
    });
    await waitForStep(
      'the stop to say it waits for the running jobs',
      () => expect(lines.join('')).toContain('worker stop still waiting for the running jobs'),
      { timeout: 20_000 },
    );
    expect(stopped).toBe(false);
    finish();
    await waitForStep('the stop to end once the job did', () => expect(stopped).toBe(true), {
      timeout: 20_000,
    });
    await stopping;
    expect(lines.join('')).toContain('worker stopped');
  });
});
