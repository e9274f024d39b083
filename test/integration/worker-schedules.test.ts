/**
 * Schedules from config become BullMQ job schedulers (one per job × org, shared by the fleet); turning
 * one off removes it; legacy polling is scheduled only for orgs with legacy enabled, the push drain only
 * when push is configured; push.prune and warehouse.maintain once.
 */
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { jobCatalog } from '../../jobs/index.ts';
import { configSchema } from '../../src/config/schema.ts';
import type { JobDefinition } from '../../src/queue/job-definition.ts';
import { type JobQueue, openJobQueue } from '../../src/queue/job-queue.ts';
import { applySchedules, planSchedules } from '../../src/worker/schedules.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';

const catalog = jobCatalog as Record<string, JobDefinition>;
const keep = { keepCompleted: 10, keepFailed: 10 };

const configWith = (schedules: Record<string, unknown>) =>
  configSchema.parse({
    schedules,
    organizations: [
      { orgId: 'org-a', token: 'token-a' },
      { orgId: 'org-b', token: 'token-b', legacy: { enabled: true } },
    ],
  });

describe('planSchedules', () => {
  it('plans users sync, recent polling and reconciliation per org, legacy only where enabled', () => {
    const planned = planSchedules(configWith({}), catalog);
    expect(planned.map((p) => [p.id, p.everyMs])).toEqual([
      ['users.sync|org-a', 3_600_000],
      ['records.recent|org-a', 60_000],
      ['connections.recent|org-a', 86_400_000],
      // A pass of each org's reconciliation stream (stream.reconcile is on by default).
      ['streams.reconcile|org-a', 3_600_000],
      // The completeness audit's tick (budget.auditShare 5 % by default).
      ['records.audit|org-a', 3_600_000],
      ['users.sync|org-b', 3_600_000],
      ['records.recent|org-b', 60_000],
      ['connections.recent|org-b', 86_400_000],
      ['streams.reconcile|org-b', 3_600_000],
      ['legacy.sync|org-b', 900_000],
      ['records.audit|org-b', 3_600_000],
      ['push.prune', 86_400_000],
      ['warehouse.maintain', 86_400_000],
    ]);
    expect(planned.find((p) => p.name === 'connections.recent')?.payload).toEqual({
      orgId: 'org-a',
      days: 30,
    });
    expect(planSchedules(configWith({ enabled: false }), catalog)).toEqual([]);
    expect(planSchedules(configWith({ recentPollMinutes: 0 }), catalog).map((p) => p.name)).not.toContain(
      'records.recent',
    );
    expect(
      planSchedules(configWith({ reconcileStreamMinutes: 0 }), catalog).map((p) => p.name),
    ).not.toContain('streams.reconcile');
  });

  it("plans each org's push.drain tick (every budget.tickSeconds) once push is configured", () => {
    const config = configSchema.parse({
      http: { pushSecret: 'push-secret-0123456789abcdef' },
      budget: { tickSeconds: 30 },
      organizations: [
        { orgId: 'org-a', token: 'token-a' },
        { orgId: 'org-b', token: 'token-b' },
      ],
    });
    expect(
      planSchedules(config, catalog)
        .filter((p) => p.name === 'push.drain')
        .map((p) => [p.id, p.everyMs, p.payload]),
    ).toEqual([
      ['push.drain|org-a', 30_000, { orgId: 'org-a' }],
      ['push.drain|org-b', 30_000, { orgId: 'org-b' }],
    ]);
  });
});

describe('applySchedules', () => {
  let testRedis: TestRedis;
  let redis: Redis;
  let jobQueue: JobQueue;

  beforeEach(() => {
    testRedis = createTestRedis('schedules');
    redis = testRedis.connect();
    jobQueue = openJobQueue({ redis, prefix: testRedis.prefix.slice(0, -1), catalog, keep });
  });
  afterEach(async () => {
    await jobQueue.close();
    await testRedis.cleanup();
  });

  it('upserts idempotently (as every worker of a fleet does), removes what the config dropped', async () => {
    const config = configWith({});
    await applySchedules(jobQueue.queue, planSchedules(config, catalog), catalog, keep);
    await applySchedules(jobQueue.queue, planSchedules(config, catalog), catalog, keep);
    const schedulers = await jobQueue.queue.getJobSchedulers(0, -1);
    expect(schedulers.map((s) => s.key).sort()).toEqual(
      planSchedules(config, catalog)
        .map((p) => p.id)
        .sort(),
    );
    // Each scheduler has produced its first job, with the definition's priority.
    await vi.waitFor(async () => {
      const jobs = await jobQueue.queue.getJobs(['prioritized', 'waiting', 'delayed']);
      const reconcile = jobs.find((j) => j.name === 'connections.recent');
      expect(reconcile?.opts.priority).toBe(catalog['connections.recent']!.priority);
    });

    const fewer = configWith({ usersSyncMinutes: 0, legacyLatestMinutes: 0 });
    await applySchedules(jobQueue.queue, planSchedules(fewer, catalog), catalog, keep);
    const left = (await jobQueue.queue.getJobSchedulers(0, -1)).map((s) => s.key);
    expect(left).not.toContain('users.sync|org-a');
    expect(left).not.toContain('legacy.sync|org-b');
    expect(left).toContain('records.recent|org-a');
  });
});
