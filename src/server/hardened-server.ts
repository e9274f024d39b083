/**
 * One node:http server with the limits a listener needs when anything untrusted can reach it (timeouts,
 * connection cap, body limit, safe headers, 500 on a throwing handler), used by both of the worker's
 * listeners (admin and push).
 *
 * One node:http server with the limits a listener needs when anything untrusted can reach it, used by
 * both of the worker's listeners (admin and push):
 *
 * - `headersTimeout` (slow-loris: headers trickled or never finished) and `requestTimeout` (a body
 *   trickled) answer 408 and close; `connectionsCheckingInterval` is set so these are enforced within a
 *   fraction of the timeout (node's default checks only every 30 s);
 * - `keepAliveTimeout` closes idle kept-alive connections; `maxConnections` caps open ones (more are
 *   closed on arrival);
 * - a body limit for every route, whether the handler reads the body or not: a declared Content-Length
 *   over it gets 413 before the handler runs; a chunked body is counted as it arrives (a request class
 *   given as node's `IncomingMessage` option) and the first byte over the limit answers 413 and closes
 *   the connection, so a handler never sees a truncated body as complete;
 * - `X-Content-Type-Options: nosniff` and `Cache-Control: no-store` on every response;
 * - a handler that throws answers 500 (logged, redacted), never a hung request.
 *
 * Hand-written rather than a framework: node:http has every one of these as an option, and the two
 * listeners serve five routes between them.
 */
import { createServer, IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config/schema.ts';
import { UserFacingError } from '../errors/index.ts';
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

/**
 * Counts body bytes as node's parser pushes them; past the limit, drops them and the end (the handler's
 * read is aborted when the connection closes, never completed with a body cut short). Dropped bytes
 * are still read off the socket (returning true): see `closeAfterLinger`.
 */
class LimitedRequest extends IncomingMessage {
  bodyLimit = Number.POSITIVE_INFINITY;
  bodyBytes = 0;
  onOverLimit: (() => void) | undefined;

  override push(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (this.bodyBytes > this.bodyLimit) return true;
    if (chunk !== null && chunk !== undefined) {
      this.bodyBytes += (chunk as Buffer).length;
      if (this.bodyBytes > this.bodyLimit) {
        this.onOverLimit?.();
        return true;
      }
    }
    return super.push(chunk, encoding);
  }
}

/** How long a connection answered 413 may go on sending before it is cut. */
const LINGER_MS = 2000;

/**
 * The answer says `Connection: close`, so node ends the connection once it is out. Destroying the
 * socket at once instead would leave the unread body in the kernel's buffer, and closing over unread
 * data sends a reset, which can wipe the 413 on its way to the client (a "lingering close", as nginx
 * does it). A client that keeps sending anyway is cut after `LINGER_MS`.
 */
function closeAfterLinger(req: IncomingMessage): void {
  const socket = req.socket;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

function tooLarge(req: IncomingMessage, res: ServerResponse, max: number): void {
  if (!res.headersSent)
    sendJson(res, 413, { error: `body larger than ${max} bytes` }, { connection: 'close' });
  else if (res.writableFinished) req.socket.end();
  else res.once('finish', () => req.socket.end());
  closeAfterLinger(req);
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
      const limited = req as LimitedRequest;
      limited.bodyLimit = limits.maxBodyBytes;
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > limits.maxBodyBytes) {
        return tooLarge(req, res, limits.maxBodyBytes);
      }
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
