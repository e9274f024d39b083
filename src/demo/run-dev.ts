/**
 * `npm run dev` (`validic-sync worker --sandbox`): the product running locally in one command. The
 * sandbox platform starts with a live feed (new, changed and deleted records all the time, as users'
 * devices produce them) and an unpaced budget (it enforces no rate limit), and the long-running worker
 * runs against it: schedules, streams, the admin listener with bull-board. PostgreSQL and Redis come
 * from DATABASE_URL and REDIS_URL; without them the embedded warehouse in `.data/dev` (fresh each start)
 * and the Redis on 127.0.0.1:6379 when it answers (the worker needs Redis: without one, one message
 * says how to get it). Every `DEV_STATUS_EVERY_MS` it prints a line of `status` in short, which is also
 * how to follow an embedded warehouse, since one process at a time may open it.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Config } from '../config/schema.ts';
import { DEFAULT_STREAM_CONSUMER_OPTIONS } from '../config/stream-options.ts';
import { ConfigError } from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import { collectSyncStatus, type OrgStatus, type QueueStatus } from '../metrics/sync-status.ts';
import { connectRedis } from '../runtime/connect-redis.ts';
import { startSandbox } from '../sandbox/index.ts';
import { reconcileStreamName } from '../stream/reconciliation.ts';
import { describeWarehouse } from '../warehouse/open-warehouse.ts';
import { startWorker, type WorkerProcess } from '../worker/start-worker.ts';
import { formatEnvFile, sandboxEnvironment } from './sandbox-environment.ts';

/** A live feed of this many records a second: about what 5,000 users' devices send (1.4 a user an hour). */
export const DEV_LIVE_RATE = 2;

/** How often `dev` prints its line of status, and when the first. */
export const DEV_STATUS_EVERY_MS = 15_000;
const DEV_FIRST_STATUS_MS = 5_000;

/** The embedded warehouse of `dev` when neither DATABASE_URL nor VALIDIC_DATA_DIR says otherwise. */
const DEV_DATA_DIR = '.data/dev';

/** The Redis `dev` uses when REDIS_URL is not set, if it answers. */
const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';

export interface DevOptions {
  /** The process's environment; the sandbox's settings are put on top of it. */
  env: NodeJS.ProcessEnv;
  /** Reads the config from an environment, as the CLI does (its --config file included). */
  loadConfig(env: NodeJS.ProcessEnv): Config;
  log: Logger;
  print: (line: string) => void;
  signal: AbortSignal;
  /** Records a second of the live feed (default DEV_LIVE_RATE). */
  liveRate?: number;
  /** Changes of the worker's settings (the worker command's --no-schedules, --concurrency …). */
  adjust?: (config: Config) => Config;
  statusEveryMs?: number;
  /** The Redis looked for without REDIS_URL (default 127.0.0.1:6379; tests give a closed port). */
  localRedisUrl?: string;
}

export async function runDev(options: DevOptions): Promise<void> {
  const { env, log, print, signal } = options;
  const liveRate = options.liveRate ?? DEV_LIVE_RATE;
  const redisUrl = env.REDIS_URL || (await localRedis(options.localRedisUrl ?? LOCAL_REDIS_URL));
  const sandbox = await startSandbox({});
  try {
    const dataDir = env.VALIDIC_DATA_DIR || DEV_DATA_DIR;
    // The sandbox is new each start, so is the warehouse that mirrors it; a configured one is kept.
    if (!env.DATABASE_URL && !env.VALIDIC_DATA_DIR) await rm(dataDir, { recursive: true, force: true });
    const requestsPerHour = env.VALIDIC_REQUESTS_PER_HOUR ? Number(env.VALIDIC_REQUESTS_PER_HOUR) : undefined;
    const sandboxEnv = sandboxEnvironment(sandbox, requestsPerHour ? { requestsPerHour } : {});
    const settings = {
      ...sandboxEnv,
      // What the other commands need to reach the same Redis and warehouse (DATABASE_URL stays in
      // the environment it came from: it may hold a password).
      ...(env.REDIS_URL ? {} : { REDIS_URL: redisUrl }),
      ...(env.DATABASE_URL ? {} : { VALIDIC_DATA_DIR: dataDir }),
      ...(env.VALIDIC_REDIS_PREFIX ? { VALIDIC_REDIS_PREFIX: env.VALIDIC_REDIS_PREFIX } : {}),
    };
    const loaded = options.loadConfig({ ...env, ...settings, REDIS_URL: redisUrl });
    const config = options.adjust ? options.adjust(loaded) : loaded;
    const envFile = resolve('.data', 'dev.env');
    await mkdir(resolve('.data'), { recursive: true });
    await writeFile(envFile, formatEnvFile(settings), { mode: 0o600 });
    sandbox.control.startLiveFeed({ ratePerSecond: liveRate });

    const worker = await startWorker(config, log, signal);
    const admin = worker.server.url;
    print(`validic-sync dev: the worker against a sandbox platform that produces records all the time`);
    print(
      `  platform   sandbox at ${new URL(sandbox.apiUrl).origin}: ${sandbox.truth.users().length} users, 30 days of history, ${liveRate} new, changed or deleted records a second; no rate limit, so the budget is unpaced (VALIDIC_REQUESTS_PER_HOUR ${config.organizations[0]!.requestsPerHour})`,
    );
    print(`  warehouse  ${describeWarehouse(config)}${env.DATABASE_URL ? '' : ', fresh each start'}`);
    print(
      `  redis      ${redactedRedis(redisUrl)}${env.REDIS_URL ? ' (REDIS_URL)' : ''}, prefix ${config.redisPrefix}`,
    );
    print(`  jobs       ${admin}/queues (bull-board)`);
    print(
      `  other commands against it: set -a; . ${join('.data', 'dev.env')}; set +a; npm run cli -- status${env.DATABASE_URL ? '' : "   (with DATABASE_URL: the embedded warehouse is this process's alone, follow it here)"}`,
    );
    if (worker.pushServer) print(`push endpoint on ${worker.pushServer.url}${config.http.pushPath}`);
    print(`worker listening on ${admin}`);
    const report = () =>
      void statusLine(worker, config).then(print, (error: unknown) =>
        log.warn({ err: error }, 'dev: status could not be read'),
      );
    // The first soon (the stream connects within seconds), then at the steady pace.
    const first = setTimeout(report, DEV_FIRST_STATUS_MS);
    const timer = setInterval(report, options.statusEveryMs ?? DEV_STATUS_EVERY_MS);
    try {
      await worker.stopped;
    } finally {
      clearTimeout(first);
      clearInterval(timer);
    }
    print('worker stopped');
  } finally {
    sandbox.control.stopLiveFeed();
    await sandbox.close();
  }
}

/** The local Redis when it answers; else the one message that says what is missing and how to get it. */
async function localRedis(url: string): Promise<string> {
  try {
    const redis = await connectRedis(url, { timeoutMs: 1500 });
    redis.disconnect();
    return url;
  } catch (error) {
    throw new ConfigError([
      {
        key: 'REDIS_URL',
        message: `the worker needs Redis (its queues, schedules and stream slots), REDIS_URL is not set and none answers at ${new URL(url).host} (${(error as Error).message})`,
        fix: 'start one (`redis-server`, or `docker compose up -d redis`), or set REDIS_URL; `npm run demo` runs without Redis',
      },
    ]);
  }
}

function redactedRedis(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return 'the configured Redis';
  }
}

/**
 * `status` in one line: whether the stream is live (heard from within three pokes), the lag from the
 * newest record's platform `created_at`, what the warehouse holds, and the queue.
 */
export async function statusLine(worker: WorkerProcess, config: Config): Promise<string> {
  const orgs = config.organizations;
  const status = await collectSyncStatus({
    warehouse: worker.runtime.warehouse,
    orgIds: orgs.map((o) => o.orgId),
    config,
    streamNames: Object.fromEntries(orgs.map((o) => [o.orgId, o.stream.name])),
    reconcileStreamNames: Object.fromEntries(
      orgs.filter((o) => o.stream.reconcile).map((o) => [o.orgId, reconcileStreamName(o.stream)]),
    ),
    queue: {
      counts: () => worker.jobQueue.counts(),
      failed: () => Promise.resolve([]),
      schedulers: () => Promise.resolve([]),
    },
  });
  const org = status.orgs.find((o) => o.orgId === orgs[0]!.orgId);
  // A live connection writes when it was last heard with each commit, and at least every heartbeat
  // while only pokes arrive; one silent for longer than that and a stale connection's wait is not live.
  const liveWithinMs = DEFAULT_STREAM_CONSUMER_OPTIONS.heartbeatCommitMs + config.stream.staleAfterMs;
  return `dev ${status.at.slice(11, 19)}: ${org ? describeOrg(org, liveWithinMs) : 'no organization yet'}; ${describeQueue(status.queue)}`;
}

function describeOrg(org: OrgStatus, liveWithinMs: number): string {
  const heard = org.budget?.recentPoll.streamLastHeardSeconds ?? null;
  const stream =
    heard === null
      ? 'stream not heard from yet'
      : heard * 1000 <= liveWithinMs
        ? `stream live (heard ${Math.round(heard)} s ago)`
        : `stream silent for ${Math.round(heard)} s`;
  const lag = org.records.lagSeconds === null ? 'no record yet' : `lag ${org.records.lagSeconds} s`;
  return `${stream}, ${lag}, ${org.records.count} records of ${org.users.count} users`;
}

function describeQueue(queue: QueueStatus | undefined): string {
  if (!queue) return 'queue unknown';
  const c = queue.counts;
  return `jobs ${c.waiting + c.prioritized} waiting, ${c.delayed} scheduled, ${c.active} running, ${c.completed} done, ${c.failed} failed`;
}
