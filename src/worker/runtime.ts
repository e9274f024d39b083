/**
 * A process's assembled parts: validated config, logger, warehouse (migrated), optional Redis, and the
 * platform clients of every configured organization. One-shot commands and the worker build it the
 * same way and hand jobs a `JobContext` cut from it.
 */
import type { Redis } from 'ioredis';
import { readBudgetPlan, readPushCap } from '../budget/read-budget-plan.ts';
import type { Config } from '../config/schema.ts';
import { ConfigError } from '../errors/index.ts';
import { createRequestStats, type RequestStats } from '../http/request-stats.ts';
import type { Logger } from '../log/logger.ts';
import type { JobContextSource } from '../queue/job-context.ts';
import { type JobOrg, jobOrg } from '../queue/job-org.ts';
import { jobSettings } from '../queue/job-settings.ts';
import { jobCursors, jobWarehouse } from '../queue/job-warehouse.ts';
import { connectRedis } from '../runtime/connect-redis.ts';
import { consumerOptionsFromConfig } from '../stream/consumer-options.ts';
import { migrateToLatest } from '../warehouse/migrate.ts';
import { openWarehouse, type Warehouse } from '../warehouse/open-warehouse.ts';
import { createOrgClients, type OrgClients } from './org-clients.ts';

export interface Runtime {
  config: Config;
  log: Logger;
  warehouse: Warehouse;
  redis: Redis | undefined;
  requestStats: RequestStats;
  org(orgId: string): OrgClients;
  /** A job context for one job execution. */
  jobContext: JobContextSource['jobContext'];
  close(): Promise<void>;
}

export interface OpenRuntimeOptions {
  /** Use Redis (for the shared request budget) when REDIS_URL is set; default true. */
  useRedis?: boolean;
  /** An already open warehouse (tests, demo); otherwise opened from config. */
  warehouse?: Warehouse;
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
  const clients = new Map<string, OrgClients>();
  for (const org of config.organizations) {
    clients.set(
      org.orgId,
      createOrgClients(org, {
        log,
        redis,
        redisPrefix: config.redisPrefix,
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
  return {
    config,
    log,
    warehouse,
    redis,
    requestStats,
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
      readBudgetPlan: (orgId, now) => readBudgetPlan(warehouse.db, config, org(orgId).config, now),
      readPushCap: (orgId) => readPushCap(warehouse.db, config, org(orgId).config),
    }),
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
      redis?.disconnect();
      if (!options.warehouse) await warehouse.close();
    },
  };
}
