/**
 * A fleet of three `validic-sync worker` processes (the real CLI) against one Redis, one Postgres and the
 * sandbox with a tight request budget: a backfill queued in BullMQ is spread over the fleet, one worker
 * is SIGKILLed in the middle, BullMQ's stalled-job check hands its jobs to the others, and the warehouse
 * ends equal to the truth, without duplicates and without a single 429. The survivors stop on SIGTERM
 * with exit code 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobQueue } from '../../src/queue/job-queue.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { ledgerProgress, waitForRunDoneAndQueueIdle } from '../helpers/backfill-progress.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { day } from '../helpers/fixtures/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import {
  openFleetJobQueue,
  startWorkerChild,
  type WorkerChild,
  workerChildEnv,
} from '../helpers/worker-fleet.ts';

const DAYS = 35;
const PUSH_SECRET = 'fleet-push-secret-0123456789';

describe('a fleet of three workers', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let testRedis: TestRedis;
  let jobQueue: JobQueue;
  const workers: WorkerChild[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({
      seed: 21,
      users: 4,
      days: DAYS,
      // 50 requests per 10 s per token: any burst above it gets 429.
      faults: { latencyMs: 15, requestBudget: { limit: 50, windowMs: 10_000 } },
    });
    db = await createTestDatabase();
    testRedis = createTestRedis('fleet');
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.child.result));
    await jobQueue?.close();
    await testRedis?.cleanup();
    await sandbox?.close();
    await db?.drop();
  });

  const windows = () => ledgerProgress(db.warehouse.db);

  it('shares the work and the budget, survives a SIGKILL, and lands exactly the truth', async () => {
    const prefix = testRedis.prefix.slice(0, -1);
    const env = workerChildEnv(sandbox, db.url, testRedis, {
      // The fleet's shared bucket stays under the sandbox's 50 per 10 s (burst 20 + 2.4/s).
      VALIDIC_REQUESTS_PER_HOUR: '9000',
      VALIDIC_WORKER_LOCK_MS: '2000',
      VALIDIC_WORKER_CONCURRENCY: '3',
      PUSH_SECRET: PUSH_SECRET,
    });
    workers.push(...(await Promise.all([0, 1, 2].map(() => startWorkerChild(env)))));
    for (const w of workers) expect((await fetch(`${w.url}/readyz`)).status).toBe(200);

    jobQueue = openFleetJobQueue(testRedis.connect(), prefix);
    expect(
      await jobQueue.enqueue('records.backfill', { orgId: sandbox.orgId, from: day(DAYS + 20), to: day(0) }),
    ).toBe(true);

    await waitForStep(
      'eight backfill windows done, over ten left',
      async () => {
        const { done, total } = await windows();
        expect(done).toBeGreaterThanOrEqual(8);
        expect(done).toBeLessThan(total - 10);
      },
      { timeout: 60_000, interval: 50 },
    );
    const victim = workers[0]!;
    victim.child.kill('SIGKILL');
    expect((await victim.child.result).signal).toBe('SIGKILL');

    await waitForRunDoneAndQueueIdle('the backfill run done and the queue idle', db.warehouse.db, jobQueue, {
      timeout: 150_000,
      interval: 200,
    });

    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);
    expect(sandbox.control.stats().rateLimited).toBe(0);
    expect((await jobQueue.counts()).failed).toBe(0);
    // The killed worker was running jobs (every worker is busy under the budget): a survivor redid them.
    expect(workers.slice(1).some((w) => /stalled/.test(w.stderr()))).toBe(true);

    // The work was spread: each survivor ran requests (its metrics count them).
    for (const w of workers.slice(1)) {
      const metrics = await (await fetch(`${w.url}/metrics`)).text();
      expect(metrics).toMatch(/validic_sync_http_requests_total\{method="GET",status="200"\} [1-9]/);
      expect(metrics).not.toContain(sandbox.token);
    }

    // The push endpoint has its own listener: the secret is checked, and a body is accepted (stored)
    // with 202; the admin listener does not answer the push path.
    const push = workers[1]!.pushUrl!;
    expect(push).toMatch(/\/push\/v1$/);
    expect((await fetch(`${workers[1]!.url}/push/v1`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(push, { method: 'POST', body: '{}' })).status).toBe(401);
    const accepted = await fetch(push, {
      method: 'POST',
      headers: { 'x-validic-sync-secret': PUSH_SECRET, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(accepted.status).toBe(202);

    for (const result of await Promise.all(workers.slice(1).map((w) => w.stop()))) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).not.toContain(sandbox.token);
    }
  }, 240_000);
});
