/**
 * The scheduled jobs through a whole in-process worker (real BullMQ, Postgres, the sandbox over HTTP):
 * at start the job schedulers produce their first ticks; records.recent re-polls the lookback window of
 * every user × resource and connections.recent reconciles the last 30 days, so the warehouse holds
 * exactly the truth's records that start in the lookback window, every user and every recent
 * connection event. Stopping the worker resolves `stopped` and releases everything.
 */

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/log/logger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { EDGE_DAYS } from '../../src/validic/platform-limits.ts';
import { startWorker } from '../../src/worker/start-worker.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';
import { sandboxWorkerConfig } from '../helpers/sandbox-organization.ts';

const LOOKBACK = 3;

describe('scheduled recent polling and reconciliation', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let testRedis: TestRedis;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 13, users: 3, days: 12 });
    db = await createTestDatabase();
    testRedis = createTestRedis('recent-jobs');
  });
  afterAll(async () => {
    await testRedis?.cleanup();
    await sandbox?.close();
    await db?.drop();
  });

  it('lands the lookback window, the users and the recent connection events', async () => {
    const config = sandboxWorkerConfig(sandbox, db.url, testRedis, { sync: { lookbackDays: LOOKBACK } });
    const worker = await startWorker(config, silentLogger, new AbortController().signal);
    try {
      expect(worker.schedules.sort()).toEqual([
        `connections.recent|${sandbox.orgId}`,
        // Stored push bodies are pruned whether or not push is on now (it may have been before).
        'push.prune',
        // The completeness audit's hourly tick (budget.auditShare 5 % by default).
        `records.audit|${sandbox.orgId}`,
        `records.recent|${sandbox.orgId}`,
        // The reconciliation stream's hourly pass (stream.reconcile is on by default).
        `streams.reconcile|${sandbox.orgId}`,
        `users.sync|${sandbox.orgId}`,
        // Partitions ahead (and the raw retention when set), once for the fleet.
        'warehouse.maintain',
      ]);
      const today = Math.floor(Date.now() / 86_400_000);
      // The lookback plus one day at each edge (either reading of the date filter, date-windows.ts).
      const from = new Date((today - LOOKBACK - EDGE_DAYS) * 86_400_000).toISOString().slice(0, 10);
      const expected = new Set(
        sandbox.truth
          .records()
          .filter((r) => r.start_time.slice(0, 10) >= from)
          .map((r) => r.id),
      );
      const horizon = new Date((today - 29) * 86_400_000).toISOString().slice(0, 10);
      const expectedEvents = sandbox.truth
        .connections()
        .filter((e) => e.created_at.slice(0, 10) >= horizon && e.created_at >= '2025-07-01').length;
      expect(expected.size).toBeGreaterThan(0);

      await vi.waitFor(
        async () => {
          const rows = await sql<{ id: string }>`select id from validic.records`.execute(db.warehouse.db);
          expect(new Set(rows.rows.map((r) => r.id))).toEqual(expected);
          const events = await sql<{ n: number }>`
            select count(*)::int as n from validic.connection_events`.execute(db.warehouse.db);
          expect(events.rows[0]!.n).toBe(expectedEvents);
          const users = await sql<{ n: number }>`select count(*)::int as n from validic.users`.execute(
            db.warehouse.db,
          );
          expect(users.rows[0]!.n).toBe(3);
          const c = await worker.jobQueue.counts();
          expect(c.active + c.waiting + c.prioritized).toBe(0);
        },
        { timeout: 30_000, interval: 100 },
      );
      const metrics = await (await fetch(`${worker.server.url}/metrics`)).text();
      expect(metrics).toMatch(/validic_sync_jobs_total\{name="records.recent",outcome="completed"\} 1/);
      expect(metrics).toMatch(/validic_sync_records_total\{type="[a-z_]+",outcome="inserted"\} [1-9]/);
    } finally {
      await worker.stop();
    }
    await worker.stopped;
  });
});
