/**
 * One node:http server with the limits a listener needs when anything untrusted can reach it, used by
 * both of the worker's listeners (admin and push):
 * - `headersTimeout` (slow-loris: headers trickled or never finished) and `requestTimeout` (a body
 *   trickled) answer 408 and close; `connectionsCheckingInterval` is set so these are enforced within a
 *   fraction of the timeout (node's default checks only every 30 s);
 * - `keepAliveTimeout` closes idle kept-alive connections; `maxConnections` caps open ones (more are
 *   closed on arrival);
 * - a body limit for every route, whether the handler reads the body or not: a declared Content-Length
 *   over it gets 413 before the handler runs; a chunked body is counted as it arrives (a request class
 *   of node's `IncomingMessage` option) and the first byte over the limit answers 413 and closes the
 *   connection, so a handler never sees a truncated body as complete;
 * - `X-Content-Type-Options: nosniff` and `Cache-Control: no-store` on every response;
 * - a handler that throws answers 500 (logged, redacted), never a hung request.
 * Hand-written rather than a framework: node:http has every one of these as an option, and the two
 * listeners serve five routes between them.
 */
import { createServer, IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config/schema.ts';
import { UserFacingError } from '../errors.ts';
import type { Logger } from '../log/logger.ts';
import { requestPath, sendJson } from './respond.ts';

export interface ServerLimits {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  maxBodyBytes: number;
}

/** The limits of one listener from `http.*` (the admin listener has its own, smaller body limit). */
export function serverLimits(http: Config['http'], listener: 'admin' | 'push'): ServerLimits {
  return {
    requestTimeoutMs: http.requestTimeoutMs,
    headersTimeoutMs: http.headersTimeoutMs,
    keepAliveTimeoutMs: http.keepAliveTimeoutMs,
    maxConnections: http.maxConnections,
    maxBodyBytes: listener === 'admin' ? http.adminMaxBodyBytes : http.maxBodyBytes,
  };
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface RunningServer {
  server: Server;
  /** The bound port (useful with port 0). */
  port: number;
  url: string;
  close(): Promise<void>;
}

export interface HardenedServerOptions {
  /** Names the listener in logs and errors ("admin", "push"). */
  name: string;
  host: string;
  port: number;
  limits: ServerLimits;
  handle: RequestHandler;
  log: Logger;
  /** What to change when the port cannot be bound, e.g. "set HTTP_PORT / HTTP_HOST". */
  fix: string;
}

/** Counts body bytes as node's parser pushes them; past the limit, drops them (and the end). */
class LimitedRequest extends IncomingMessage {
  bodyLimit = Number.POSITIVE_INFINITY;
  bodyBytes = 0;
  onOverLimit: (() => void) | undefined;

  override push(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (this.bodyBytes > this.bodyLimit) return false;
    if (chunk !== null && chunk !== undefined) {
      this.bodyBytes += (chunk as Buffer).length;
      if (this.bodyBytes > this.bodyLimit) {
        this.onOverLimit?.();
        return false;
      }
    }
    return super.push(chunk, encoding);
  }
}

function tooLarge(req: IncomingMessage, res: ServerResponse, max: number): void {
  // Close once the answer is out: the rest of the body is never read, and the handler (if it was
  // reading) sees the request aborted rather than a body cut short.
  res.once('finish', () => req.socket.destroy());
  if (res.headersSent) {
    if (res.writableFinished) req.socket.destroy();
    return;
  }
  sendJson(res, 413, { error: `body larger than ${max} bytes` }, { connection: 'close' });
}

export function createHardenedServer(options: Omit<HardenedServerOptions, 'host' | 'port' | 'fix'>): Server {
  const { limits, log, name } = options;
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  const server = createServer(
    {
      IncomingMessage: LimitedRequest,
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    (req, res) => {
      res.setHeader('x-content-type-options', 'nosniff');
      res.setHeader('cache-control', 'no-store');
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > limits.maxBodyBytes) {
        return tooLarge(req, res, limits.maxBodyBytes);
      }
      const limited = req as LimitedRequest;
      limited.bodyLimit = limits.maxBodyBytes;
      limited.onOverLimit = () => tooLarge(req, res, limits.maxBodyBytes);
      options.handle(req, res).catch((error: unknown) => {
        log.warn({ err: error, listener: name, path: requestPath(req.url) }, 'HTTP request failed');
        if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
        else res.destroy();
      });
    },
  );
  server.maxConnections = limits.maxConnections;
  return server;
}

export async function startHardenedServer(options: HardenedServerOptions): Promise<RunningServer> {
  const server = createHardenedServer(options);
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) =>
      reject(
        new UserFacingError(
          `the ${options.name} listener cannot listen on ${options.host}:${options.port} (${error.code ?? error.message})`,
          { fix: options.fix, cause: error },
        ),
      );
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
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
