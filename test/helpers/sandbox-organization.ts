/**
 * An `organizations[]` entry (config input) pointed at a sandbox, for tests that build a config in
 * process; sandboxEnv (cli.ts) is the same for a CLI child. A request budget far above what tests use.
 */
import { type Config, configSchema } from '../../src/config/schema.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { TEST_REDIS_URL } from './redis.ts';

export function sandboxOrganization(sandbox: Sandbox, extra: Record<string, unknown> = {}) {
  return {
    orgId: sandbox.orgId,
    token: sandbox.token,
    apiUrl: sandbox.apiUrl,
    streamsUrl: sandbox.streamsUrl,
    legacyUrl: sandbox.legacyUrl,
    requestsPerHour: 10_000_000,
    ...extra,
  };
}

/**
 * A worker's config on the sandbox, for a worker started in process: its database, its own Redis prefix
 * (`prefix` ends in ':', as a TestRedis prefix does), the admin listener on a free port and no streams;
 * `extra` adds or replaces top-level settings. workerChildEnv (worker-fleet.ts) is the same for a child.
 */
export function sandboxWorkerConfig(
  sandbox: Sandbox,
  databaseUrl: string,
  redis: { prefix: string },
  extra: Record<string, unknown> = {},
): Config {
  return configSchema.parse({
    databaseUrl,
    redisUrl: TEST_REDIS_URL,
    redisPrefix: redis.prefix.slice(0, -1),
    allowInsecureLoopback: true,
    http: { port: 0 },
    worker: { streams: false },
    organizations: [sandboxOrganization(sandbox)],
    ...extra,
  });
}
