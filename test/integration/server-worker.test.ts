/**
 * The worker's admin listener: health, readiness against real Postgres and Redis (and what a dead one
 * looks like: its name, never its error text, which goes to the log), Prometheus metrics without secrets
 * in labels, the read-only /queues view, and no push endpoint (that has a listener of its own).
 */
import { PassThrough } from 'node:stream';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createWorkerMetrics } from '../../src/metrics/worker-metrics.ts';
import { serverLimits } from '../../src/server/hardened-server.ts';
import { startWorkerServer, type WorkerServer } from '../../src/server/worker-server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';

describe('worker HTTP server', () => {
  let db: TestDatabase;
  let testRedis: TestRedis;
  let server: WorkerServer;
  let deadRedis: Redis;
  let redisDead = false;
  let redisError = '';
  let logLines = '';
  const destination = new PassThrough();
  destination.on('data', (chunk: Buffer) => {
    logLines += chunk.toString('utf8');
  });
  const metrics = createWorkerMetrics({
    queueCounts: async () => ({ waiting: 3, active: 1 }),
    budgets: async () => [{ orgId: 'org-a', remaining: 17 }],
    quarantine: async () => [{ kind: 'record', items: 2 }],
    reconcileMissed: async () => [{ orgId: 'org-a', missed: 4 }],
    streamStates: () => ({ 'org-a': { 0: 'live', w1: 'waiting_slot' } }),
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    testRedis = createTestRedis('server');
    const redis = testRedis.connect();
    // A client of a port nobody listens on: what Redis being away looks like.
    deadRedis = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    deadRedis.on('error', () => {});
    server = await startWorkerServer({
      host: '127.0.0.1',
      port: 0,
      log: createLogger({ level: 'warn', destination }),
      limits: serverLimits(configSchema.parse({}).http, 'admin'),
      metrics,
      readiness: [
        { name: 'postgres', check: async () => void (await sql`select 1`.execute(db.warehouse.db)) },
        {
          name: 'redis',
          check: async () => {
            try {
              await (redisDead ? deadRedis : redis).ping();
            } catch (error) {
              redisError = (error as Error).message;
              throw error;
            }
          },
        },
      ],
      queues: async () => ({
        counts: { waiting: 3 },
        failed: [{ id: 'x', name: 'records.poll', failedReason: '<b>' }],
      }),
      checkTimeoutMs: 500,
    });
  });
  afterAll(async () => {
    await server?.close();
    deadRedis?.disconnect();
    await testRedis?.cleanup();
    await db?.drop();
  });

  it('answers /healthz and /readyz, and names the dependency that is down without its error text', async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ok: true, failed: [] });
    redisDead = true;
    const notReady = await fetch(`${server.url}/readyz`);
    redisDead = false;
    expect(notReady.status).toBe(503);
    const body = await notReady.text();
    expect(JSON.parse(body)).toEqual({ ok: false, failed: ['redis'] });
    // The error text (host, port, driver message) is in the log, not in the answer.
    expect(redisError).not.toBe('');
    expect(body).not.toContain(redisError);
    expect(logLines).toContain(redisError);
    expect(logLines).toContain('readiness check redis failed');
  });

  it('serves Prometheus metrics from events and from sources', async () => {
    metrics.recordRequest({ method: 'GET', host: 'api.example', status: 429, durationMs: 3, attempt: 1 });
    metrics.recordLoad(
      { measurement: { inserted: 5, updated: 1, unchanged: 0, stale: 0, quarantined: 0 } },
      new Date(Date.now() - 90_000).toISOString(),
      'stream',
    );
    metrics.recordJob('records.poll', 'completed');
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('validic_sync_records_total{type="measurement",outcome="inserted"} 5');
    expect(text).toContain('validic_sync_http_requests_total{method="GET",status="429"} 1');
    expect(text).toContain('validic_sync_request_budget_remaining{org="org-a"} 17');
    expect(text).toContain('validic_sync_queue_jobs{state="waiting"} 3');
    expect(text).toContain('validic_sync_quarantine_items{kind="record"} 2');
    expect(text).toContain('validic_sync_reconcile_missed{org="org-a"} 4');
    expect(text).toContain('validic_sync_stream_connections{org="org-a",state="live"} 1');
    expect(text).toContain('validic_sync_stream_connections{org="org-a",state="waiting_slot"} 1');
    expect(text).toMatch(/validic_sync_commit_lag_seconds_bucket\{le="300",via="stream"\} 1/);
    expect(text).toContain('validic_sync_jobs_total{name="records.poll",outcome="completed"} 1');
    expect(text).not.toMatch(/token/i);
  });

  it('serves /queues as JSON or escaped HTML, and 404s the rest, the push path included', async () => {
    const json = await fetch(`${server.url}/queues`);
    expect(await json.json()).toMatchObject({ counts: { waiting: 3 } });
    const html = await fetch(`${server.url}/queues`, { headers: { accept: 'text/html' } });
    const page = await html.text();
    expect(page).toContain('&#60;b&#62;');
    expect(page).not.toContain('<b>');
    expect((await fetch(`${server.url}/push/v1`)).status).toBe(404);
    expect((await fetch(`${server.url}/push/v1`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`, { method: 'DELETE' })).status).toBe(405);
  });
});
