/**
 * What every entry point assembles once (the CLI's commands, the worker): config, logger, warehouse,
 * Redis, each organization's platform clients, the request counters, and the job context cut from them.
 */
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import {
  type JobContext,
  type JobOrg,
  jobCursors,
  jobOrg,
  jobSettings,
  jobWarehouse,
} from '../../jobs/job-context.ts';
import { readBudgetPlan, readPushCap } from '../budget/read-budget-plan.ts';
import { budgetKeyOf, createRequestBudget, type RedisEvalClient } from '../budget/request-budget.ts';
import type { Config, OrganizationConfig } from '../config/schema.ts';
import { ConfigError } from '../errors/index.ts';
import { createHttpClient } from '../http/http-client.ts';
import type { HttpClient, RequestBudget, RequestEvent } from '../http/http-client-types.ts';
import { createRequestStats, type RequestStats } from '../http/request-stats.ts';
import { createLegacyClient, type LegacyClient } from '../legacy/legacy-client.ts';
import type { Logger } from '../log/logger.ts';
import type { JobContextSource } from '../queue/job-execution.ts';
import { connectRedis } from '../runtime/connect-redis.ts';
import { consumerOptionsFromConfig } from '../stream/consumer-options.ts';
import { createPlatformClock, type PlatformClock } from '../time/platform-clock.ts';
import { createStreamsClient, type StreamsClient } from '../validic/streams-client.ts';
import { createV2Client, type V2Client } from '../validic/v2-client.ts';
import { migrateToLatest } from '../warehouse/migrate.ts';
import { openWarehouse, type Warehouse } from '../warehouse/open-warehouse.ts';
import { recordPlatformClock } from '../warehouse/platform-clock-store.ts';
import {
  commandRunHolder,
  heartbeatRuns,
  RUN_HEARTBEAT_MS,
  releaseRuns,
  WORKER_RUN_HOLDER,
} from '../warehouse/run-heartbeats.ts';

/**
 * A process's assembled parts: validated config, logger, warehouse (migrated), optional Redis, and the
 * platform clients of every configured organization. One-shot commands and the worker build it the
 * same way and hand jobs a `JobContext` cut from it.
 */
export interface Runtime {
  config: Config;
  log: Logger;
  warehouse: Warehouse;
  redis: Redis | undefined;
  requestStats: RequestStats;
  /** The platform's clock as this process learns it from every answer (one per process). */
  platformClock: PlatformClock;
  org(orgId: string): OrgClients;
  /** A job context for one job execution. */
  jobContext: JobContextSource<JobContext>['jobContext'];
  close(): Promise<void>;
}

export interface OpenRuntimeOptions {
  /** Use Redis (for the shared request budget) when REDIS_URL is set; default true. */
  useRedis?: boolean;
  /**
   * Who holds the runs this runtime's jobs start (src/warehouse/run-heartbeats.ts): `WORKER_RUN_HOLDER`
   * for the worker; default this command's process, whose runs not done by close() are interrupted.
   */
  runHolder?: string;
  /** An already open warehouse (tests, demo); otherwise opened from config. */
  warehouse?: Warehouse;
  /** The process's platform clock (default: a new one, learned from this runtime's answers). */
  platformClock?: PlatformClock;
}

export async function openRuntime(
  config: Config,
  log: Logger,
  options: OpenRuntimeOptions = {},
): Promise<Runtime> {
  const warehouse =
    options.warehouse ??
    (await openWarehouse({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log }));
  let redis: Redis | undefined;
  try {
    await migrateToLatest(warehouse.db);
    if (config.redisUrl && options.useRedis !== false) redis = await connectRedis(config.redisUrl);
  } catch (error) {
    if (!options.warehouse) await warehouse.close();
    throw error;
  }
  const requestStats = createRequestStats();
  const platformClock = options.platformClock ?? createPlatformClock();
  const clients = new Map<string, OrgClients>();
  for (const org of config.organizations) {
    clients.set(
      org.orgId,
      createOrgClients(org, {
        log,
        redis,
        redisPrefix: config.redisPrefix,
        platformClock,
        onRequest: (event) => requestStats.record(event),
      }),
    );
  }
  const org = (orgId: string): OrgClients => {
    const found = clients.get(orgId);
    if (found) return found;
    throw new ConfigError([
      {
        key: 'organizations',
        message: `organization ${orgId} is not configured`,
        fix: `add ${orgId} to the organizations of the config file (or set VALIDIC_ORG_ID)`,
      },
    ]);
  };
  const settings = jobSettings(config);
  const jobStore = jobWarehouse(warehouse);
  const jobOrgs = new Map<string, JobOrg>();
  const jobOrgOf = (orgId: string): JobOrg => {
    const found =
      jobOrgs.get(orgId) ?? jobOrg(org(orgId), warehouse, consumerOptionsFromConfig(config.stream));
    jobOrgs.set(orgId, found);
    return found;
  };
  const cursors = jobCursors(warehouse.db);
  // The runs this process holds stay alive while it does (run-heartbeats.ts).
  const runHolder = options.runHolder ?? commandRunHolder();
  const beat = () =>
    heartbeatRuns(warehouse.db, runHolder).catch((error: unknown) =>
      log.debug({ err: error }, 'could not renew the heartbeat of this process’s runs'),
    );
  const heartbeat = setInterval(beat, RUN_HEARTBEAT_MS);
  heartbeat.unref();
  const clockWriter = startPlatformClockWriter(platformClock, warehouse, log);
  return {
    config,
    log,
    warehouse,
    redis,
    requestStats,
    platformClock,
    org,
    jobContext: ({ jobId, attempt, signal, enqueue }) => ({
      log: log.child({ jobId }),
      warehouse: jobStore,
      cursors,
      org: jobOrgOf,
      signal,
      attempt,
      jobId,
      enqueue,
      settings,
      platformClock,
      readBudgetPlan: (orgId, now) => readBudgetPlan(warehouse.db, config, org(orgId).config, now),
      readPushCap: (orgId) => readPushCap(warehouse.db, config, org(orgId).config),
      runHolder,
    }),
    async close() {
      clearInterval(heartbeat);
      // A command's runs end with it: what is not done is interrupted (the same command resumes it). The
      // worker fleet's runs live on in the queue, for the other replicas or the next start.
      if (runHolder !== WORKER_RUN_HOLDER)
        await releaseRuns(warehouse.db, runHolder).catch((error: unknown) =>
          log.warn({ err: error }, 'could not mark this command’s unfinished runs interrupted'),
        );
      await clockWriter.stop();
      await Promise.all([...clients.values()].map((c) => c.close()));
      redis?.disconnect();
      if (!options.warehouse) await warehouse.close();
    },
  };
}

/**
 * Writes what this process knows of the platform's clock to the warehouse (for `status`, another
 * process) once a minute while it learns something new, and once more when the process closes.
 */
const PLATFORM_CLOCK_WRITE_MS = 60_000;

function startPlatformClockWriter(clock: PlatformClock, warehouse: Warehouse, log: Logger) {
  const reporter = `${hostname()}:${process.pid}`;
  let written: number | undefined;
  const write = async () => {
    const reading = clock.reading();
    if (reading.observedAt === undefined || reading.observedAt === written) return;
    written = reading.observedAt;
    try {
      await recordPlatformClock(warehouse.db, {
        reporter,
        offsetMs: reading.offsetMs,
        uncertaintyMs: reading.uncertaintyMs,
        observedAt: new Date(reading.observedAt),
      });
    } catch (err) {
      log.debug({ err }, 'could not record the platform clock');
    }
  };
  const timer = setInterval(() => void write(), PLATFORM_CLOCK_WRITE_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await write();
    },
  };
}

/**
 * The platform clients of one organization, sharing one HTTP client whose budget is that org's token
 * bucket (in Redis when the process has Redis, so a fleet shares it).
 */

export interface OrgClients {
  config: OrganizationConfig;
  http: HttpClient;
  budget: RequestBudget;
  legacyBudget: RequestBudget;
  v2: V2Client;
  streams: StreamsClient;
  legacy: LegacyClient;
  close(): Promise<void>;
}

export interface OrgClientsOptions {
  log: Logger;
  redis?: RedisEvalClient | undefined;
  redisPrefix: string;
  /** Told every answer's Date (default: none). */
  platformClock?: PlatformClock;
  onRequest?: (event: RequestEvent) => void;
}

export function createOrgClients(org: OrganizationConfig, options: OrgClientsOptions): OrgClients {
  const rate = { limit: org.requestsPerHour };
  const keyPrefix = `${options.redisPrefix}:budget:`;
  const budget = createRequestBudget({ rate, redis: options.redis, keyPrefix, key: budgetKeyOf(org.token) });
  const legacyToken = org.legacyToken ?? org.token;
  // The legacy token has its own limit on the platform; when it is the same token it shares the bucket.
  const legacyBudget =
    legacyToken === org.token
      ? budget
      : createRequestBudget({ rate, redis: options.redis, keyPrefix, key: budgetKeyOf(legacyToken) });
  const http = createHttpClient({
    logger: options.log,
    budgets: { forKey: (key) => (key === legacyToken ? legacyBudget : budget) },
    ...(options.platformClock ? { platformClock: options.platformClock } : {}),
    ...(options.onRequest ? { onRequest: options.onRequest } : {}),
  });
  return {
    config: org,
    http,
    budget,
    legacyBudget,
    v2: createV2Client({
      http,
      apiUrl: org.apiUrl,
      orgId: org.orgId,
      token: org.token,
      ...(options.platformClock ? { platformClock: options.platformClock } : {}),
    }),
    streams: createStreamsClient({ http, streamsUrl: org.streamsUrl, token: org.token }),
    legacy: createLegacyClient({
      http,
      legacyUrl: org.legacyUrl,
      orgId: org.legacyOrgId ?? org.orgId,
      accessToken: legacyToken,
      ...(options.platformClock ? { platformClock: options.platformClock } : {}),
      ...(org.legacy.serviceVersion ? { serviceVersion: org.legacy.serviceVersion } : {}),
    }),
    close: () => http.close(),
  };
}
