/**
 * The worker's admin listener: health, readiness against real Postgres and Redis (and what a dead one
 * looks like: its name, never its error text, which goes to the log), Prometheus metrics without secrets
 * in labels, bull-board at /queues (read-only) over a real BullMQ queue, the Host header and proxy
 * headers, the admin token, and no push endpoint (that has a listener of its own).
 */
import { request } from 'node:http';
import { PassThrough } from 'node:stream';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createWorkerMetrics } from '../../src/metrics/worker-metrics.ts';
import { serverLimits } from '../../src/server/hardened-server.ts';
import { createQueueDashboard } from '../../src/server/queue-dashboard.ts';
import { startWorkerServer, type WorkerServer } from '../../src/server/worker-server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';

describe('worker HTTP server', () => {
  let db: TestDatabase;
  let testRedis: TestRedis;
  let server: WorkerServer;
  let queue: Queue;
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
    queue = new Queue('validic-sync', {
      connection: testRedis.connect(),
      prefix: testRedis.prefix.slice(0, -1),
    });
    await queue.add('records.poll', { orgId: 'org-a', uid: 'u1' });
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
      dashboard: createQueueDashboard(queue, { writable: false }),
      checkTimeoutMs: 500,
    });
  });
  afterAll(async () => {
    await server?.close();
    await queue?.close();
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

  it('serves bull-board at /queues, read-only, and 404s the rest, the push path included', async () => {
    const page = await fetch(`${server.url}/queues`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const api = (await (await fetch(`${server.url}/queues/api/queues`)).json()) as {
      queues: { name: string; readOnlyMode: boolean; counts: Record<string, number> }[];
    };
    expect(api.queues).toHaveLength(1);
    expect(api.queues[0]).toMatchObject({ name: 'validic-sync', readOnlyMode: true });
    expect(api.queues[0]!.counts.waiting).toBe(1);
    expect((await fetch(`${server.url}/push/v1`)).status).toBe(404);
    expect((await fetch(`${server.url}/push/v1`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`, { method: 'DELETE' })).status).toBe(405);
  });

  it('refuses a Host header that is not its own (DNS rebinding) and a loopback request a proxy forwarded', async () => {
    // node:http, since fetch sets the Host header itself.
    const get = (path: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        request(`${server.url}${path}`, { headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
          .on('error', reject)
          .end();
      });
    const port = new URL(server.url).port;
    for (const path of ['/metrics', '/readyz', '/queues'])
      expect(await get(path, { host: `evil.example:${port}` }), path).toBe(421);
    expect(await get('/metrics', { host: `localhost:${port}` })).toBe(200);
    expect(await get('/metrics', { host: `127.0.0.1:${port}`, 'x-forwarded-for': '203.0.113.9' })).toBe(403);
    expect(await get('/metrics', { host: `127.0.0.1:${port}`, forwarded: 'for=203.0.113.9' })).toBe(403);
    // Liveness probes name whatever host they reach.
    expect(await get('/healthz', { host: `10.1.2.3:${port}` })).toBe(200);
  });

  it('asks for the admin token when one is set, and keeps /healthz open', async () => {
    const token = 'admin-token-for-the-test-0123';
    const guarded = await startWorkerServer({
      host: '127.0.0.1',
      port: 0,
      log: createLogger({ level: 'silent' }),
      limits: serverLimits(configSchema.parse({}).http, 'admin'),
      metrics,
      readiness: [],
      dashboard: createQueueDashboard(queue, { writable: false }),
      adminToken: token,
    });
    try {
      for (const path of ['/metrics', '/readyz', '/queues', '/queues/api/queues']) {
        const refused = await fetch(`${guarded.url}${path}`);
        expect(refused.status, path).toBe(401);
        expect(refused.headers.get('www-authenticate'), path).toMatch(/^Basic/);
        const bearer = await fetch(`${guarded.url}${path}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(bearer.status, path).toBe(200);
      }
      const basic = `Basic ${Buffer.from(`ops:${token}`).toString('base64')}`;
      expect((await fetch(`${guarded.url}/queues`, { headers: { authorization: basic } })).status).toBe(200);
      expect(
        (await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer nope' } })).status,
      ).toBe(401);
      expect((await fetch(`${guarded.url}/healthz`)).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});
