/**
 * One `worker` process, assembled: runtime (warehouse migrated, Redis, org clients with the fleet-shared
 * request budget), the BullMQ queue and worker, the job schedulers, the stream supervisor with its
 * fleet-wide slots, metrics and the HTTP server. `stop()` (or the abort of `signal`) shuts down in order:
 * stop taking jobs and let the running ones settle (they see the aborted signal, so they stop after the
 * current batch; the loader's transaction means nothing half-done is committed), stop the streams (each
 * flushes its micro-batch), release the stream slots, close the listeners and the connections.
 * Two listeners: the admin one (health, readiness, metrics, queues; `http.host`/`http.port`) and, only
 * when push is configured, the push one (`http.pushHost`/`http.pushPort`), which answers the push path
 * alone.
 */

import { randomUUID } from 'node:crypto';
import { jobCatalog } from '../../jobs/index.ts';
import { describeBudget, readBudgetPlan } from '../budget/read-budget-plan.ts';
import { usablePerHour } from '../budget/request-budget.ts';
import type { Config } from '../config/schema.ts';
import { ConfigError, UserFacingError } from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import { readAuditStatus } from '../metrics/audit-status.ts';
import { readReconciliationStatus, readStreamGapsStatus } from '../metrics/sync-status.ts';
import { createWorkerMetrics, type WorkerMetrics } from '../metrics/worker-metrics.ts';
import { pushConfigured } from '../push/push-admission.ts';
import { pushDepsFromConfig } from '../push/push-deps.ts';
import type { CatalogPayloads } from '../queue/job-catalog.ts';
import type { JobDefinition } from '../queue/job-definition.ts';
import type { KeepJobs } from '../queue/job-queue.ts';
import { type JobQueue, openJobQueue } from '../queue/job-queue.ts';
import { type QueueWorker, startQueueWorker } from '../queue/queue-worker.ts';
import { dropRedis, redisAnswers, stopReconnecting } from '../runtime/connect-redis.ts';
import { type RunningServer, serverLimits } from '../server/hardened-server.ts';
import { handlePushRequest, pushListenerRefusals, startPushServer } from '../server/push-server.ts';
import { createQueueDashboard } from '../server/queue-dashboard.ts';
import { startWorkerServer, type WorkerServer } from '../server/worker-server.ts';
import { reconcileStreamName } from '../stream/reconciliation.ts';
import { withSpan } from '../telemetry/tracer.ts';
import { readCursor, reconcileLastCursor } from '../warehouse/cursors.ts';
import { onTransactionRetry } from '../warehouse/loader/load-transaction.ts';
import { pingWarehouse } from '../warehouse/open-warehouse.ts';
import { countQuarantineByKind } from '../warehouse/quarantine.ts';
import { WORKER_RUN_HOLDER } from '../warehouse/run-heartbeats.ts';
import { jobMetricsHooks } from './job-metrics.ts';
import { openRuntime, type Runtime } from './runtime.ts';
import { applySchedules, planSchedules } from './schedules.ts';
import {
  createStreamSlots,
  holdLease,
  type StreamSlots,
  type StreamSupervisor,
  superviseStreams,
} from './stream-supervisor.ts';

/** How long a stop waits for Redis to answer before it treats Redis as down (see stop()). */
const REDIS_ANSWER_AT_STOP_MS = 2000;

/** How often a stop that has not ended logs what it still waits for. */
const STOP_REPORT_MS = 10_000;

/** How long the replica exporting the fleet-wide gauges keeps that role without a scrape. */
const FLEET_REPORTER_LEASE_MS = 120_000;

export interface WorkerProcess {
  runtime: Runtime;
  /** Typed by the job catalog: `enqueue(name, payload)` takes the payload type of the job it names. */
  jobQueue: JobQueue<CatalogPayloads>;
  queueWorker: QueueWorker;
  slots: StreamSlots;
  streams: StreamSupervisor | undefined;
  metrics: WorkerMetrics;
  /** The admin listener: /healthz, /readyz, /metrics, /queues. */
  server: WorkerServer;
  /** The push listener; absent when push is not configured. */
  pushServer: RunningServer | undefined;
  /** Scheduler ids upserted at start. */
  schedules: string[];
  /** Resolves once the process has shut down (after `signal` aborted or `stop()`). */
  stopped: Promise<void>;
  stop(): Promise<void>;
}

export interface StartWorkerOptions {
  /** Override the job catalog (tests). */
  catalog?: Record<string, JobDefinition>;
  /** An already opened runtime (tests); closed by stop() all the same. */
  runtime?: Runtime;
  /** How often a stop that has not ended logs what it waits for, ms (default STOP_REPORT_MS; tests). */
  stopReportMs?: number;
}

export async function startWorker(
  config: Config,
  log: Logger,
  outerSignal: AbortSignal,
  options: StartWorkerOptions = {},
): Promise<WorkerProcess> {
  // stop() aborts this too, so jobs and streams see the same signal whether a signal or a caller stops us.
  const stopController = new AbortController();
  const signal = AbortSignal.any([outerSignal, stopController.signal]);
  if (!config.redisUrl) {
    throw new ConfigError([
      {
        key: 'REDIS_URL (redisUrl)',
        message: 'the worker needs Redis for its queues, schedules and stream slots',
        fix: 'set REDIS_URL (e.g. redis://127.0.0.1:6379); one-shot commands like backfill run without it',
      },
    ]);
  }
  const catalog = options.catalog ?? (jobCatalog as Record<string, JobDefinition>);
  const runtime = options.runtime ?? (await openRuntime(config, log, { runHolder: WORKER_RUN_HOLDER }));
  const redis = runtime.redis;
  if (!redis) {
    await runtime.close();
    throw new UserFacingError('the worker needs Redis for its queues', { fix: 'set REDIS_URL' });
  }
  let lastRedisError = 0;
  redis.on('error', (error) => {
    if (Date.now() - lastRedisError < 5000) return;
    lastRedisError = Date.now();
    log.warn({ err: error }, 'Redis connection error; reconnecting');
  });
  const prefix = config.redisPrefix;
  const reporterId = randomUUID();
  const keep: KeepJobs = { keepCompleted: config.worker.keepCompleted, keepFailed: config.worker.keepFailed };
  const jobQueue = openJobQueue<CatalogPayloads>({ redis, prefix, catalog, keep });
  // The framework's view (push, streams): it queues names it only knows at run time; still validated.
  const db = runtime.warehouse.db;

  let streams: StreamSupervisor | undefined;
  const metrics = createWorkerMetrics({
    queueCounts: async () => ({ ...(await jobQueue.counts()) }),
    budgets: async () =>
      Promise.all(
        config.organizations.map(async (o) => ({
          orgId: o.orgId,
          remaining: await runtime.org(o.orgId).budget.remaining(),
        })),
      ),
    grantedRates: async () =>
      Promise.all(
        config.organizations.map(async (o) => ({
          orgId: o.orgId,
          grantedPerHour: Math.round(await runtime.org(o.orgId).budget.grantedPerHour()),
          configuredPerHour: Math.round(usablePerHour(o.requestsPerHour)),
        })),
      ),
    platformClock: () => runtime.platformClock.reading(),
    quarantine: async () =>
      Object.entries(await countQuarantineByKind(db)).map(([kind, items]) => ({ kind, items })),
    reconcileMissed: async () =>
      Promise.all(
        config.organizations.map(async (o) => ({
          orgId: o.orgId,
          missed: (await readCursor(db, o.orgId, reconcileLastCursor()))?.missed ?? 0,
        })),
      ),
    reconciliation: async () =>
      Promise.all(
        config.organizations.map(async (o) => {
          const now = new Date();
          const gaps = await readStreamGapsStatus(db, o.orgId);
          const r = await readReconciliationStatus(
            db,
            o.orgId,
            o.stream.reconcile ? reconcileStreamName(o.stream) : null,
            now,
          );
          return {
            orgId: o.orgId,
            openGaps: gaps.open,
            missed24h: r.last24h.missed,
            missed7d: r.last7d.missed,
            lastPassAt: r.lastPass ? Date.parse(r.lastPass.startedAt) : null,
            lastPassOutcome: r.lastPass?.outcome ?? null,
          };
        }),
      ),
    audit: async () =>
      Promise.all(
        config.organizations.map(async (o) => {
          const status = await readAuditStatus(db, o.orgId, new Date(), config.audit.estimateDays);
          return { orgId: o.orgId, ...status };
        }),
      ),
    budgetPlans: async () =>
      Promise.all(
        config.organizations.map(async (o) => {
          const now = Date.now();
          return { orgId: o.orgId, budget: describeBudget(await readBudgetPlan(db, config, o, now), now) };
        }),
      ),
    streamStates: () => streams?.states() ?? {},
    // One replica at a time exports the fleet-wide gauges; the lease outlives a few missed scrapes.
    isFleetReporter: () =>
      holdLease(redis, `${prefix}:metrics-reporter`, reporterId, FLEET_REPORTER_LEASE_MS),
  });
  // Requests are counted by the runtime's hook; the metrics ride along on the same events.
  const recordStats = runtime.requestStats.record.bind(runtime.requestStats);
  runtime.requestStats.record = (event) => {
    recordStats(event);
    metrics.recordRequest(event);
  };
  // Every load of this process (jobs, streams, reconciliation passes) goes through this warehouse.
  const stopCountingRetries = onTransactionRetry(runtime.warehouse, (code) =>
    metrics.recordTransactionRetry(code),
  );

  let reapply: (() => void) | undefined;
  let server: WorkerServer | undefined;
  let pushServer: RunningServer | undefined;
  try {
    const planned = planSchedules(config, catalog);
    const schedules = await applySchedules(jobQueue.queue, planned, catalog, keep);
    // A Redis that restarted without persistence lost the schedulers: upsert them again on reconnect.
    reapply = () => {
      if (signal.aborted) return;
      applySchedules(jobQueue.queue, planned, catalog, keep).catch((error: unknown) =>
        log.warn({ err: error }, 'could not re-apply the schedules after a Redis reconnect'),
      );
    };
    redis.on('ready', reapply);
    server = await startWorkerServer({
      host: config.http.host,
      port: config.http.port,
      log,
      limits: serverLimits(config.http, 'admin'),
      metrics,
      readiness: [
        { name: 'postgres', check: () => pingWarehouse(db) },
        { name: 'redis', check: async () => void (await redis.ping()) },
      ],
      ...(config.http.dashboard
        ? { dashboard: createQueueDashboard(jobQueue.queue, { writable: config.http.dashboardWritable }) }
        : {}),
      ...(config.http.adminToken ? { adminToken: config.http.adminToken } : {}),
      allowedHosts: config.http.allowedHosts,
    });
    if (pushConfigured(config)) {
      const pushDeps = pushDepsFromConfig({
        config,
        // A signature's age is judged on the platform's clock (the provider stamps its send time on it).
        now: () => runtime.platformClock.now(),
        warehouse: runtime.warehouse,
        enqueue: (name, payload, extra) => jobQueue.enqueue(name, payload, extra),
        redis,
        log,
      });
      pushServer = await startPushServer({
        host: config.http.pushHost,
        port: config.http.pushPort,
        log,
        limits: serverLimits(config.http, 'push'),
        push: {
          path: config.http.pushPath,
          onRefused: pushListenerRefusals(pushDeps),
          // The trace of a push starts here; bullmq-otel carries it into the jobs the push queues.
          handle: (req, res) => withSpan('push.receive', {}, () => handlePushRequest(req, res, pushDeps)),
        },
      });
    }

    // Jobs and streams start last: a server that cannot bind fails the start with nothing running.
    const queueWorker = startQueueWorker({
      runtime,
      redis,
      prefix,
      catalog,
      jobQueue,
      concurrency: config.worker.concurrency,
      lockDurationMs: config.worker.lockDurationMs,
      maxStalledCount: config.worker.maxStalledCount,
      signal,
      hooks: jobMetricsHooks(metrics),
      log,
    });
    const slots = createStreamSlots({ redis, prefix, ttlMs: config.worker.streamSlotTtlMs, log });
    if (config.worker.streams && config.organizations.length > 0) {
      streams = superviseStreams({ runtime, slots, jobQueue, signal, metrics, log });
    }

    let stopping: Promise<void> | undefined;
    const stop = () => {
      if (!stopController.signal.aborted) stopController.abort(new Error('worker stopping'));
      stopping ??= (async () => {
        log.info('worker stopping: no new jobs; running jobs stop after their current batch');
        if (reapply) redis.off('ready', reapply);
        // A stop that hangs says on what, every STOP_REPORT_MS, until it ends (or a second signal ends it).
        let step = 'Redis to answer';
        const startedAt = Date.now();
        const report = setInterval(() => {
          const seconds = Math.round((Date.now() - startedAt) / 1000);
          log.warn({ step, seconds }, `worker stop still waiting for ${step}`);
        }, options.stopReportMs ?? STOP_REPORT_MS);
        report.unref();
        try {
          // Every Redis command of ours waits for Redis to come back; a stop during an outage would wait
          // with them, forever. So when Redis does not answer, cut its connections first: what the stop
          // would have handed back (running jobs, stream slots) stays in Redis and expires with its lock
          // or lease, as after a SIGKILL, and another worker redoes or takes it.
          const redisReachable = await redisAnswers(redis, REDIS_ANSWER_AT_STOP_MS);
          if (!redisReachable) {
            log.warn(
              'Redis does not answer: stopping without handing jobs and stream slots back; another worker takes them over once their locks and leases expire',
            );
            stopReconnecting(redis);
            dropRedis(redis);
            // A stream that stops queues its gap's pass; that fails now, and the gap waits in Postgres.
            step = 'the queue to close';
            await jobQueue.close({ redisReachable });
          }
          step = 'the running jobs';
          await queueWorker.close({ redisReachable });
          step = 'the streams to flush';
          await streams?.done;
          step = 'the stream slots to be released';
          await slots.releaseAll();
          step = 'the listeners to close';
          await pushServer?.close();
          await server?.close();
          step = 'the queue to close';
          await jobQueue.close();
          stopCountingRetries();
          step = 'the warehouse and the platform clients to close';
          await runtime.close();
        } finally {
          clearInterval(report);
        }
        log.info('worker stopped');
      })();
      return stopping;
    };
    const stopped = new Promise<void>((resolve, reject) => {
      const onAbort = () => stop().then(resolve, reject);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    stopped.catch(() => {});
    log.info(
      {
        url: server.url,
        push: pushServer ? `${pushServer.url}${config.http.pushPath}` : 'off',
        schedules: schedules.length,
        streams: streams !== undefined,
      },
      'worker running',
    );
    return {
      runtime,
      jobQueue,
      queueWorker,
      slots,
      streams,
      metrics,
      server,
      pushServer,
      schedules,
      stopped,
      stop: async () => {
        await stop();
      },
    };
  } catch (error) {
    if (reapply) redis.off('ready', reapply);
    await pushServer?.close();
    await server?.close();
    await jobQueue.close();
    stopCountingRetries();
    await runtime.close();
    throw error;
  }
}
