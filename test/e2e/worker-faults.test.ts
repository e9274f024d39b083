/**
 * A running worker outlives its dependencies going away: Postgres cut off (through a TCP proxy this test
 * controls, never the shared server) and Redis restarted (a redis-server of this test, without
 * persistence, so it comes back empty). The worker waits, recovers without a restart, and the backfill
 * completes once it is queued again (Redis lost the queue; the ledger in Postgres kept what was done).
 * SIGTERM then stops it with exit code 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobQueue } from '../../src/queue/job-queue.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { ledgerProgress, waitForRunDoneAndQueueIdle } from '../helpers/backfill-progress.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { day } from '../helpers/fixtures/index.ts';
import { ADMIN_URL, createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { openFleetJobQueue, startWorkerChild, type WorkerChild } from '../helpers/worker-fleet.ts';

const DAYS = 35;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A TCP proxy in front of PostgreSQL that the test can cut (refuse and drop everything) and restore. */
class CuttableProxy {
  readonly port: number;
  readonly #target: { host: string; port: number };
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();

  constructor(port: number, target: { host: string; port: number }) {
    this.port = port;
    this.#target = target;
  }

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = tcpConnect(this.#target.port, this.#target.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.#server = server;
  }

  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const s of this.#sockets) s.destroy();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  }
}

function startRedisServer(port: number): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    {
      stdio: 'ignore',
    },
  );
}

async function waitForRedis(url: string): Promise<void> {
  await waitForStep(
    'redis to answer ping',
    async () => {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => {});
      try {
        await probe.connect();
        expect(await probe.ping()).toBe('PONG');
      } finally {
        probe.disconnect();
      }
    },
    { timeout: 10_000, interval: 50 },
  );
}

describe('worker under Postgres and Redis outages', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let proxy: CuttableProxy;
  let redisPort: number;
  let redisServer: ChildProcess | undefined;
  let worker: WorkerChild | undefined;
  let jobQueue: JobQueue | undefined;
  let queueRedis: Redis | undefined;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 31, users: 4, days: DAYS, faults: { latencyMs: 40 } });
    db = await createTestDatabase();
    const admin = new URL(ADMIN_URL);
    proxy = new CuttableProxy(await freePort(), { host: admin.hostname, port: Number(admin.port || 5432) });
    await proxy.open();
    redisPort = await freePort();
    redisServer = startRedisServer(redisPort);
    await waitForRedis(`redis://127.0.0.1:${redisPort}`);
  });
  afterAll(async () => {
    worker?.child.kill('SIGKILL');
    await worker?.child.result;
    await jobQueue?.close();
    queueRedis?.disconnect();
    redisServer?.kill('SIGKILL');
    await proxy?.cut();
    await sandbox?.close();
    await db?.drop();
  });

  const windows = () => ledgerProgress(db.warehouse.db);
  const readiness = async () => {
    const res = await fetch(`${worker!.url}/readyz`);
    return { status: res.status, body: (await res.json()) as { ok: boolean; failed: string[] } };
  };
  /** /readyz names the stopped dependency and nothing else (no error text: that goes to the log). */
  const waitForUnready = async (dependency: 'postgres' | 'redis') => {
    await waitForStep(
      `the worker to report ${dependency} unready`,
      async () => expect((await readiness()).body).toEqual({ ok: false, failed: [dependency] }),
      { timeout: 10_000, interval: 50 },
    );
    await waitForStep(
      `the log to say the ${dependency} readiness check failed`,
      () => expect(worker!.stderr()).toContain(`readiness check ${dependency} failed`),
      { timeout: 10_000, interval: 100 },
    );
  };

  it('waits out both outages and completes the sync', async () => {
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    const dbUrl = new URL(db.url);
    dbUrl.host = `127.0.0.1:${proxy.port}`;
    worker = await startWorkerChild(
      sandboxEnv(sandbox, {
        DATABASE_URL: dbUrl.href,
        REDIS_URL: redisUrl,
        HTTP_PORT: '0',
        VALIDIC_WORKER_LOCK_MS: '2000',
        VALIDIC_WORKER_CONCURRENCY: '2',
        VALIDIC_SCHEDULES: 'false',
        VALIDIC_WORKER_STREAMS: 'false',
      }),
    );
    queueRedis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    queueRedis.on('error', () => {});
    jobQueue = openFleetJobQueue(queueRedis, 'validic-sync');
    const backfill = { orgId: sandbox.orgId, from: day(DAYS + 20), to: day(0) };
    await jobQueue.enqueue('records.backfill', backfill);
    await waitForStep(
      'five backfill windows done',
      async () => expect((await windows()).done).toBeGreaterThanOrEqual(5),
      { timeout: 60_000, interval: 50 },
    );

    // Postgres goes away: the worker notices, keeps its jobs (delayed, not failed), and waits.
    await proxy.cut();
    await waitForUnready('postgres');
    await waitForStep(
      'the log to say postgres is unreachable',
      () => expect(worker!.stderr()).toMatch(/unreachable/),
      { timeout: 20_000, interval: 100 },
    );
    const doneAtCut = (await windows()).done;
    await proxy.open();
    await waitForStep(
      'over three more backfill windows done after the reopen',
      async () => expect((await windows()).done).toBeGreaterThan(doneAtCut + 3),
      { timeout: 60_000, interval: 100 },
    );
    expect((await jobQueue.counts()).failed).toBe(0);

    // Redis restarts empty: the worker reconnects by itself and takes new work.
    redisServer!.kill('SIGKILL');
    await new Promise((resolve) => redisServer!.once('exit', resolve));
    await waitForUnready('redis');
    redisServer = startRedisServer(redisPort);
    await waitForRedis(redisUrl);
    await waitForStep(
      'the worker to report ready again',
      async () => expect((await readiness()).status).toBe(200),
      { timeout: 20_000, interval: 100 },
    );

    // The queue is gone with Redis; queuing the same backfill resumes the run from the ledger.
    await jobQueue.enqueue('records.backfill', backfill);
    await waitForRunDoneAndQueueIdle(
      'the resumed backfill run done and the queue empty',
      db.warehouse.db,
      jobQueue,
      { timeout: 120_000, interval: 200 },
    );
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);

    const result = await worker.stop();
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(result.stderr).not.toContain(sandbox.token);
  }, 360_000);

  // BullMQ's graceful close waits for its blocking connection to end, which never happens while Redis is
  // down (bullmq#4656): without the worker's own handling, this SIGTERM waited forever.
  it('stops on SIGTERM while Redis is down, with streams and schedules running', async () => {
    const port = await freePort();
    const redisUrl = `redis://127.0.0.1:${port}`;
    const outageRedis = startRedisServer(port);
    let running: WorkerChild | undefined;
    try {
      await waitForRedis(redisUrl);
      running = await startWorkerChild(
        sandboxEnv(sandbox, {
          DATABASE_URL: db.url,
          REDIS_URL: redisUrl,
          HTTP_PORT: '0',
          VALIDIC_WORKER_LOCK_MS: '2000',
          LOG_LEVEL: 'info',
        }),
      );
      await waitForStep(
        'the worker to hold a stream slot',
        () => expect(running!.stderr()).toContain('holding a stream slot'),
        { timeout: 30_000, interval: 100 },
      );
      outageRedis.kill('SIGKILL');
      await new Promise((resolve) => outageRedis.once('exit', resolve));
      await waitForStep(
        'the worker to report redis unready',
        async () => {
          const res = await fetch(`${running!.url}/readyz`);
          expect(((await res.json()) as { failed: string[] }).failed).toContain('redis');
        },
        { timeout: 10_000, interval: 50 },
      );
      const result = await running.stop(60_000);
      expect(result.code, result.stderr.slice(-2000)).toBe(0);
      expect(result.stdout).toContain('worker stopped');
    } finally {
      running?.child.kill('SIGKILL');
      outageRedis.kill('SIGKILL');
    }
  }, 120_000);
});
