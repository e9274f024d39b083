/**
 * The worker's admin listener (`http.host`:`http.port`, loopback unless configured), node:http without
 * a framework, hardened like the push listener: /healthz, /readyz, /metrics and bull-board at /queues/*.
 *
 * The worker's admin listener (`http.host`:`http.port`, loopback unless configured), node:http without a
 * framework, hardened like the push listener (`hardened-server.ts`):
 *
 * - `GET /healthz`: the process is alive (200);
 * - `GET /readyz`: Postgres and Redis answer: `{"ok":true,"failed":[]}`, else 503 with the names of the
 *   failed checks (`{"ok":false,"failed":["postgres"]}`). Their error texts (host names, users, driver
 *   messages) go to the log, redacted, never into the answer;
 * - `GET /metrics`: Prometheus text (prom-client);
 * - `/queues/*`: bull-board (queue-dashboard.ts), when the dashboard is on (read-only unless
 *   `http.dashboardWritable`).
 *
 * Every route but /healthz is behind `admin-access.ts`: a Host header naming this listener, then the
 * admin token when one is set, loopback clients without a proxy header otherwise. The push endpoint, the one route the internet must reach, has a listener of its own
 * (`push-server.ts`) and does not answer here. Routes are listed in `adminRoutes`, the dashboard under
 * its prefix, so a new one goes in one place. Nothing here echoes tokens: metrics labels hold org ids
 * and statuses only, and failure reasons shown by the dashboard were redacted before they were stored.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log/logger.ts';
import { adminHostNames, checkAdminAccess } from './admin-access.ts';
import { type RunningServer, type ServerLimits, startHardenedServer } from './hardened-server.ts';
import { QUEUE_DASHBOARD_PATH, type RequestListener } from './queue-dashboard.ts';
import { requestPath, send, sendJson } from './respond.ts';

export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

export interface WorkerServerOptions {
  host: string;
  port: number;
  log: Logger;
  limits: ServerLimits;
  readiness: ReadinessCheck[];
  metrics?: { text(): Promise<string>; contentType: string };
  /** bull-board at /queues; absent = dashboard off (404). */
  dashboard?: RequestListener;
  /** The admin token (`http.adminToken`); absent = loopback clients only. */
  adminToken?: string;
  /** Names the Host header may give beside the loopback names and `host` (`http.allowedHosts`). */
  allowedHosts?: readonly string[];
  /** Per readiness check, ms (default 2,000). */
  checkTimeoutMs?: number;
}

export type WorkerServer = RunningServer;

type Route = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Runs every readiness check; the names of those that failed (their errors are logged, not returned). */
export async function failedReadiness(
  checks: ReadinessCheck[],
  timeoutMs: number,
  log: Logger,
): Promise<string[]> {
  const failed = await Promise.all(
    checks.map(async ({ name, check }) => {
      try {
        await withTimeout(check(), timeoutMs, name);
        return undefined;
      } catch (error) {
        log.warn({ err: error, check: name }, `readiness check ${name} failed`);
        return name;
      }
    }),
  );
  return failed.filter((name) => name !== undefined);
}

/** Every route of the admin listener (GET/HEAD), by path. */
export function adminRoutes(options: WorkerServerOptions): Map<string, Route> {
  const timeoutMs = options.checkTimeoutMs ?? 2000;
  const routes = new Map<string, Route>();
  routes.set('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' }));
  routes.set('/readyz', async (_req, res) => {
    const failed = await failedReadiness(options.readiness, timeoutMs, options.log);
    sendJson(res, failed.length === 0 ? 200 : 503, { ok: failed.length === 0, failed });
  });
  const { metrics } = options;
  if (metrics) {
    routes.set('/metrics', async (_req, res) => send(res, 200, await metrics.text(), metrics.contentType));
  }
  return routes;
}

export async function startWorkerServer(options: WorkerServerOptions): Promise<WorkerServer> {
  const routes = adminRoutes(options);
  const hostNames = adminHostNames({ bindHost: options.host, allowedHosts: options.allowedHosts ?? [] });
  return startHardenedServer({
    name: 'admin',
    host: options.host,
    port: options.port,
    limits: options.limits,
    log: options.log,
    fix: 'set HTTP_PORT / HTTP_HOST (http.port / http.host) to a free port and a local interface',
    handle: async (req, res) => {
      const path = requestPath(req.url);
      const access = checkAdminAccess({
        path,
        remoteAddress: req.socket.remoteAddress,
        headers: req.headers,
        token: options.adminToken,
        hostNames,
      });
      if (!access.allowed) {
        const challenge: Record<string, string> =
          access.status === 401 ? { 'www-authenticate': 'Basic realm="validic-sync admin"' } : {};
        return sendJson(res, access.status, { error: access.message }, challenge);
      }
      if (
        options.dashboard &&
        (path === QUEUE_DASHBOARD_PATH || path.startsWith(`${QUEUE_DASHBOARD_PATH}/`))
      ) {
        return options.dashboard(req, res);
      }
      const route = routes.get(path);
      if (!route) return sendJson(res, 404, { error: 'not found' });
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return sendJson(res, 405, { error: 'method not allowed' }, { allow: 'GET, HEAD' });
      }
      await route(req, res);
    },
  });
}
