/**
 * `validic-sync status` end to end: on the embedded warehouse (no DATABASE_URL, no Redis) after a small
 * backfill, as a table and as JSON; and on Postgres with Redis, where it adds queue depths, failed jobs
 * and stream slot holders.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jobCatalog } from '../../jobs/index.ts';
import type { SyncStatus } from '../../src/metrics/sync-status.ts';
import type { CatalogPayloads } from '../../src/queue/job-catalog.ts';
import type { JobDefinition } from '../../src/queue/job-definition.ts';
import { openJobQueue } from '../../src/queue/job-queue.ts';
import { createStreamSlots } from '../../src/worker/stream-supervisor.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { day } from '../helpers/fixtures/index.ts';
import { TEST_REDIS_URL } from '../helpers/redis.ts';
import { useSandbox, useTempDir, useTestRedis } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

describe('status', () => {
  const sandbox = useSandbox({ seed: 5, users: 2, days: 6 });
  const dataDir = useTempDir('validic-sync-status-');
  const db = useTestDatabase();
  const testRedis = useTestRedis('status');

  it('reports an embedded warehouse after a backfill, as a table and as JSON', async () => {
    const env = sandboxEnv(sandbox, { VALIDIC_DATA_DIR: dataDir.path });
    // Reading an embedded warehouse that does not exist would create an empty one: refused, exit 2.
    const empty = await runCli(['status'], env);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/there is no embedded warehouse in .*VALIDIC_DATA_DIR/s);
    expect(existsSync(join(dataDir.path, 'PG_VERSION'))).toBe(false);

    const backfill = await runCli(['backfill', '--from', day(8), '--to', day(0)], env);
    expect(backfill.code, backfill.stderr).toBe(0);

    const table = await runCli(['status'], env);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(`== ${sandbox.orgId}`);
    expect(table.stdout).toMatch(/lag \(newest created_at\)/);
    expect(table.stdout).toMatch(/reconcile last/);
    expect(table.stdout).toMatch(/queue: REDIS_URL not set/);

    const json = await runCli(['status', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const status = JSON.parse(json.stdout) as SyncStatus;
    expect(status.warehouse).toBe('pglite');
    const org = status.orgs.find((o) => o.orgId === sandbox.orgId)!;
    expect(org.records.count).toBe(sandbox.truth.records().length);
    expect(org.users.count).toBe(2);
    expect(org.users.lastFullSync).not.toBeNull();
    expect(org.records.lagSeconds).toBeGreaterThanOrEqual(0);
    expect(org.runs).toEqual([]);
    expect(status.queue).toBeUndefined();
    expect(json.stdout).not.toContain(sandbox.token);
    // Four CLI runs, each opening the embedded warehouse (PGlite, WebAssembly): about 17 s on an idle
    // 2-core machine, over 60 s with three files and a CPU-bound process beside it.
  }, 180_000);

  it('adds queue depths, failed jobs and stream slot holders with Redis', async () => {
    const prefix = testRedis.prefix.slice(0, -1);
    const redis = testRedis.connect();
    const jobQueue = openJobQueue<CatalogPayloads>({
      redis,
      prefix,
      catalog: jobCatalog as Record<string, JobDefinition>,
      keep: { keepCompleted: 10, keepFailed: 10 },
    });
    await jobQueue.enqueue('users.sync', { orgId: sandbox.orgId });
    await jobQueue.enqueue('records.backfill', { orgId: sandbox.orgId, from: day(3), to: day(0) });
    const slots = createStreamSlots({ redis, prefix, ttlMs: 60_000 });
    await slots.tryAcquire(sandbox.orgId, 'validic-sync', 1);
    try {
      const env = sandboxEnv(sandbox, {
        DATABASE_URL: db.url,
        REDIS_URL: TEST_REDIS_URL,
        VALIDIC_REDIS_PREFIX: prefix,
      });
      const json = await runCli(['status', '--json'], env);
      expect(json.code, json.stderr).toBe(0);
      const status = JSON.parse(json.stdout) as SyncStatus;
      expect(status.warehouse).toBe('postgres');
      expect(status.queue!.counts.prioritized + status.queue!.counts.waiting).toBe(2);
      expect(status.queue!.failed).toEqual([]);
      const org = status.orgs.find((o) => o.orgId === sandbox.orgId)!;
      expect(org.stream.slots).toEqual({ 0: slots.owner });

      const table = await runCli(['status'], env);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/== queue/);
      expect(table.stdout).toMatch(/connections: 1 \(slot 0 held by /);
    } finally {
      await slots.releaseAll();
      await jobQueue.close();
    }
  });
});
