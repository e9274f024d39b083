/**
 * Loading the config: the JSON file (default `config/default.json`, or `VALIDIC_SYNC_CONFIG`, or
 * `--config`), then the environment on top (env wins; secrets may come from `NAME_FILE` files, see
 * secret-files.ts), checked by the one schema, every problem reported at once with the env name to set
 * and the fix; and the commands' demand that at least one organization is configured. Called by entry
 * points only: nothing parses config at import time, and library code never exits.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { z } from 'zod';
import { ConfigError, type ConfigProblem, UsageError } from '../errors/index.ts';
import { registerSecret } from '../redact/redact-secrets.ts';
import { type Config, configSchema, type OrganizationConfig } from './schema.ts';
import { readSecretFiles } from './secret-files.ts';

/** Environment variable → path in the config object. Organization ones apply to organizations[0]. */
const ENV_TO_KEY: Record<string, string> = {
  DATABASE_URL: 'databaseUrl',
  REDIS_URL: 'redisUrl',
  VALIDIC_DATA_DIR: 'dataDir',
  LOG_LEVEL: 'logLevel',
  VALIDIC_RECENT_POLL: 'sync.recentPoll',
  HTTP_PORT: 'http.port',
  HTTP_HOST: 'http.host',
  PUSH_PORT: 'http.pushPort',
  PUSH_HOST: 'http.pushHost',
  PUSH_SECRET: 'http.pushSecret',
  VALIDIC_ADMIN_TOKEN: 'http.adminToken',
  VALIDIC_DASHBOARD: 'http.dashboard',
  VALIDIC_DASHBOARD_WRITABLE: 'http.dashboardWritable',
  PUSH_PATH: 'http.pushPath',
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: 'http.maxConnectionsPerAddress',
  HTTP_ALLOWED_HOSTS: 'http.allowedHosts',
  VALIDIC_ALLOW_INSECURE_LOOPBACK: 'allowInsecureLoopback',
  VALIDIC_ALLOW_INSECURE_HOSTS: 'allowInsecureHosts',
  VALIDIC_ORG_ID: 'organizations.0.orgId',
  VALIDIC_TOKEN: 'organizations.0.token',
  VALIDIC_API_URL: 'organizations.0.apiUrl',
  VALIDIC_STREAMS_URL: 'organizations.0.streamsUrl',
  VALIDIC_LEGACY_URL: 'organizations.0.legacyUrl',
  VALIDIC_LEGACY_ORG_ID: 'organizations.0.legacyOrgId',
  VALIDIC_LEGACY_TOKEN: 'organizations.0.legacyToken',
  VALIDIC_REQUESTS_PER_HOUR: 'organizations.0.requestsPerHour',
  VALIDIC_STREAM_NAME: 'organizations.0.stream.name',
  VALIDIC_RECONCILE_STREAM: 'organizations.0.stream.reconcile',
  VALIDIC_SYNC_CONCURRENCY: 'sync.concurrency',
  VALIDIC_WORKER_CONCURRENCY: 'worker.concurrency',
  VALIDIC_WORKER_LOCK_MS: 'worker.lockDurationMs',
  VALIDIC_WORKER_STREAMS: 'worker.streams',
  VALIDIC_SCHEDULES: 'schedules.enabled',
  VALIDIC_REDIS_PREFIX: 'redisPrefix',
  // --- push ---
  VALIDIC_APPLICATION_SECRET: 'organizations.0.applicationSecret',
  PUSH_SIGNATURE_MAX_AGE_SECONDS: 'push.signatureMaxAgeSeconds',
  PUSH_MAX_ITEMS: 'push.maxItems',
  PUSH_RATE_PER_MINUTE: 'push.ratePerMinute',
  PUSH_COALESCE_SECONDS: 'push.coalesceSeconds',
  PUSH_RETENTION_DAYS: 'push.retentionDays',
  // --- end push ---
  RAW_RETENTION_MONTHS: 'warehouse.rawRetentionMonths',
  VALIDIC_AUDIT_SHARE: 'budget.auditShare',
  VALIDIC_NEW_USER_HISTORY_DAYS: 'sync.newUserHistoryDays',
  VALIDIC_AUDIT_LOOKBACK_DAYS: 'audit.lookbackDays',
  PARTITION_MONTHS_AHEAD: 'warehouse.partitionMonthsAhead',
};
const KEY_TO_ENV = Object.fromEntries(Object.entries(ENV_TO_KEY).map(([env, key]) => [key, env]));

export const DEFAULT_CONFIG_FILE = 'config/default.json';

export interface LoadConfigOptions {
  /** Explicit config file; otherwise `VALIDIC_SYNC_CONFIG`, otherwise `config/default.json` if present. */
  file?: string;
  cwd?: string;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, options: LoadConfigOptions = {}): Config {
  const cwd = options.cwd ?? process.cwd();
  const problems: ConfigProblem[] = [];
  const raw = readConfigFile(options.file ?? env.VALIDIC_SYNC_CONFIG, cwd, problems);
  applyEnvironment(raw, readSecretFiles(env, problems));

  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) problems.push(...parsed.error.issues.map(describeIssue));
  problems.push(...checkUrlSecurity(raw));
  if (problems.length > 0 || !parsed.success) throw new ConfigError(problems);

  const config = finishOrganizations(parsed.data);

  // Masked verbatim everywhere: the platform's credentials, and the push secret and admin token (at least
  // 16 characters, never a word). Database and Redis passwords are not: a person may choose a word
  // (`postgres`), so they are redacted only where they sit, a URL's password field or a `password=`
  // parameter (src/redact/redact-secrets.ts says why).
  for (const org of config.organizations) {
    registerSecret(org.token);
    registerSecret(org.legacyToken);
    registerSecret(org.applicationSecret);
  }
  registerSecret(config.http.pushSecret);
  registerSecret(config.http.adminToken);
  return config;
}

function readConfigFile(
  file: string | undefined,
  cwd: string,
  problems: ConfigProblem[],
): Record<string, unknown> {
  const path = resolve(cwd, file ?? DEFAULT_CONFIG_FILE);
  if (!existsSync(path)) {
    if (file) {
      problems.push({
        key: 'VALIDIC_SYNC_CONFIG',
        message: `config file ${path} does not exist`,
        fix: 'point VALIDIC_SYNC_CONFIG or --config at an existing JSON file',
      });
    }
    return {};
  }
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    problems.push({
      key: path,
      message: 'is not a JSON object',
      fix: 'write the settings as one JSON object',
    });
  } catch (error) {
    problems.push({
      key: path,
      message: `is not valid JSON (${(error as Error).message})`,
      fix: 'correct the JSON syntax of the config file',
    });
  }
  return {};
}

function applyEnvironment(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  for (const [name, key] of Object.entries(ENV_TO_KEY)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    setPath(raw, key.split('.'), parseEnvValue(name, value));
  }
}

function parseEnvValue(name: string, value: string): unknown {
  if (['VALIDIC_ALLOW_INSECURE_LOOPBACK', 'VALIDIC_DASHBOARD', 'VALIDIC_DASHBOARD_WRITABLE'].includes(name))
    return parseBoolean(value);
  if (name === 'VALIDIC_ALLOW_INSECURE_HOSTS' || name === 'HTTP_ALLOWED_HOSTS')
    return value
      .split(',')
      .map((host) => host.trim())
      .filter(Boolean);
  return value;
}

function parseBoolean(value: string): boolean | string {
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  return value;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node: any = target;
  for (let i = 0; i < path.length - 1; i++) {
    const part = path[i]!;
    const nextIsIndex = /^\d+$/.test(path[i + 1]!);
    if (node[part] === undefined || node[part] === null) node[part] = nextIsIndex ? [] : {};
    node = node[part];
  }
  node[path[path.length - 1]!] = value;
}

/** Legacy credentials default to the v2 ones (the README's environment table). */
function finishOrganizations(config: Config): Config {
  for (const org of config.organizations) {
    org.legacyOrgId ??= org.orgId;
    org.legacyToken ??= org.token;
  }
  return config;
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || hostname === '::1' || /^127\./.test(hostname);
}

/**
 * The token rides in every URL: refuse plain http except on loopback when explicitly allowed. Runs on
 * the raw (unvalidated) settings so its problems are listed together with the schema's; URLs that do
 * not parse are the schema's to report.
 */
function checkUrlSecurity(raw: Record<string, any>): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const allowLoopback = raw.allowInsecureLoopback === true;
  const allowedHosts: unknown[] = Array.isArray(raw.allowInsecureHosts) ? raw.allowInsecureHosts : [];
  const organizations: unknown[] = Array.isArray(raw.organizations) ? raw.organizations : [];
  organizations.forEach((org: any, index) => {
    for (const field of ['apiUrl', 'streamsUrl', 'legacyUrl'] as const) {
      if (typeof org?.[field] !== 'string' || !URL.canParse(org[field])) continue;
      const url = new URL(org[field]);
      if (url.protocol === 'https:' || url.protocol !== 'http:') continue;
      if (allowLoopback && isLoopback(url.hostname)) continue;
      if (allowedHosts.includes(url.hostname)) continue;
      const key = `organizations.${index}.${field}`;
      problems.push({
        key: envLabel(key),
        message: `${url.protocol}//${url.host} is not https, and the token would travel in clear text`,
        fix: isLoopback(url.hostname)
          ? 'use https, or set VALIDIC_ALLOW_INSECURE_LOOPBACK=true for a local sandbox'
          : 'use an https:// URL',
      });
    }
  });
  return problems;
}

function envLabel(key: string): string {
  const env = KEY_TO_ENV[key];
  return env ? `${env} (${key})` : key;
}

function describeIssue(issue: z.core.$ZodIssue): ConfigProblem {
  const key = issue.path.map(String).join('.') || '(root)';
  const missing = issue.code === 'invalid_type' && /received undefined/.test(issue.message);
  const env = KEY_TO_ENV[key];
  return {
    key: envLabel(key),
    message: missing ? 'is missing' : issue.message,
    fix: env
      ? `set ${env}${missing ? '' : ' to a valid value'} (or ${key} in the config file)`
      : `correct ${key} in the config file`,
  };
}

/**
 * Commands that talk to the platform need at least one organization; the file may list none (a
 * warehouse-only `migrate` or `status` needs no credentials), so the check lives here, per command.
 */
export function requireOrganizations(config: Config): OrganizationConfig[] {
  if (config.organizations.length > 0) return config.organizations;
  throw new ConfigError([
    {
      key: 'VALIDIC_ORG_ID, VALIDIC_TOKEN',
      message: 'no organization is configured',
      fix: 'set VALIDIC_ORG_ID and VALIDIC_TOKEN (or list organizations in the config file); to try the tool without credentials run `validic-sync demo`',
    },
  ]);
}

/** The organizations a command's `--org <id>` names: that one, or every configured one without it. */
export function selectOrganizations(config: Config, orgId: string | undefined): OrganizationConfig[] {
  const orgs = requireOrganizations(config).filter((o) => !orgId || o.orgId === orgId);
  if (orgs.length === 0) {
    throw new UsageError(
      `organization ${orgId} is not configured`,
      `use one of: ${config.organizations.map((o) => o.orgId).join(', ')}`,
    );
  }
  return orgs;
}
