/**
 * The worker's small HTTP server (node:http, no framework):
 * - GET /healthz  the process is alive (200);
 * - GET /readyz   Postgres and Redis answer (200, else 503 with which one failed);
 * - GET /metrics  Prometheus text (prom-client);
 * - POST <push path>  the push-notification endpoint, when a push handler is given;
 * - GET /queues   queue counts and recent failures as JSON (or a small HTML table for browsers), when
 *                 the dashboard is on. bull-board is not installed; this is a read-only stand-in.
 * Binds `http.host` (loopback unless configured). Nothing here echoes tokens: metrics labels hold org
 * ids and statuses only, and failure reasons shown under /queues were redacted before they were stored.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log/logger.ts';

export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

export interface WorkerServerOptions {
  host: string;
  port: number;
  log: Logger;
  readiness: ReadinessCheck[];
  metrics?: { text(): Promise<string>; contentType: string };
  /** Mounted at `pushPath` for every method (the handler answers 405 itself). */
  push?: { path: string; handle(req: IncomingMessage, res: ServerResponse): Promise<void> };
  /** Data for /queues; absent = dashboard off (404). */
  queues?: () => Promise<unknown>;
  /** Per readiness check, ms (default 2,000). */
  checkTimeoutMs?: number;
}

export interface WorkerServer {
  server: Server;
  /** The bound port (useful with port 0). */
  port: number;
  url: string;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: string, type = 'application/json; charset=utf-8') {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function pathOf(url: string | undefined): string {
  try {
    return new URL(url ?? '/', 'http://local.invalid').pathname.replace(/\/+$/, '') || '/';
  } catch {
    return '/';
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function queuesHtml(data: unknown): string {
  const rows = Object.entries((data as { counts?: Record<string, number> }).counts ?? {})
    .map(([state, n]) => `<tr><td>${escapeHtml(state)}</td><td>${n}</td></tr>`)
    .join('');
  const failed = ((data as { failed?: { id: string; name: string; failedReason: string }[] }).failed ?? [])
    .map(
      (f) =>
        `<tr><td>${escapeHtml(f.name)}</td><td>${escapeHtml(f.id)}</td><td>${escapeHtml(f.failedReason ?? '')}</td></tr>`,
    )
    .join('');
  return `<!doctype html><meta charset="utf-8"><title>validic-sync queues</title>
<h1>queue jobs</h1><table border="1"><tr><th>state</th><th>jobs</th></tr>${rows}</table>
<h2>recent failures</h2><table border="1"><tr><th>job</th><th>id</th><th>reason</th></tr>${failed}</table>`;
}

export async function startWorkerServer(options: WorkerServerOptions): Promise<WorkerServer> {
  const timeoutMs = options.checkTimeoutMs ?? 2000;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = pathOf(req.url);
    if (options.push && path === (options.push.path.replace(/\/+$/, '') || '/')) {
      return options.push.handle(req, res);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, 405, JSON.stringify({ error: 'method not allowed' }));
    }
    switch (path) {
      case '/healthz':
        return send(res, 200, JSON.stringify({ status: 'ok' }));
      case '/readyz': {
        const results = await Promise.all(
          options.readiness.map(async ({ name, check }) => {
            try {
              await withTimeout(check(), timeoutMs, name);
              return [name, 'ok'] as const;
            } catch (error) {
              return [name, (error as Error).message || 'failed'] as const;
            }
          }),
        );
        const ready = results.every(([, state]) => state === 'ok');
        return send(res, ready ? 200 : 503, JSON.stringify({ ready, checks: Object.fromEntries(results) }));
      }
      case '/metrics':
        if (!options.metrics) break;
        return send(res, 200, await options.metrics.text(), options.metrics.contentType);
      case '/queues': {
        if (!options.queues) break;
        const data = await options.queues();
        if (/text\/html/.test(String(req.headers.accept ?? ''))) {
          return send(res, 200, queuesHtml(data), 'text/html; charset=utf-8');
        }
        return send(res, 200, JSON.stringify(data));
      }
    }
    send(res, 404, JSON.stringify({ error: 'not found' }));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      options.log.warn({ err: error, path: pathOf(req.url) }, 'worker HTTP request failed');
      if (!res.headersSent) send(res, 500, JSON.stringify({ error: 'internal error' }));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    server,
    port,
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
