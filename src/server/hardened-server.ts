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
 * - `keepAliveTimeout` closes idle kept-alive connections; `maxConnections` caps open ones, and
 *   `maxConnectionsPerAddress` those of one client address (an IPv6 client by its /64, which one host
 *   usually holds whole): more are closed on arrival, so one address with slow sockets cannot take the
 *   listener's every connection;
 * - every connection the listener refuses or cuts mid-request (over a cap, a header or request timeout
 *   after some bytes, a declared body over the limit) is reported (`onRefused`): the push listener
 *   counts them, since one may have carried a notification (src/push/handle-push.ts, "Refusals");
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
import { type AddressInfo, isIPv6, type Socket } from 'node:net';
import type { Config } from '../config/schema.ts';
import { UserFacingError } from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';
import { requestPath, sendJson } from './respond.ts';

export interface ServerLimits {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** Open connections of one client address (an IPv6 one by its /64); absent: no such cap. */
  maxConnectionsPerAddress?: number;
  maxBodyBytes: number;
}

/** The limits of one listener from `http.*` (the admin listener has its own, smaller body limit). */
export function serverLimits(http: Config['http'], listener: 'admin' | 'push'): ServerLimits {
  return {
    requestTimeoutMs: http.requestTimeoutMs,
    headersTimeoutMs: http.headersTimeoutMs,
    keepAliveTimeoutMs: http.keepAliveTimeoutMs,
    maxConnections: http.maxConnections,
    maxConnectionsPerAddress: http.maxConnectionsPerAddress,
    maxBodyBytes: listener === 'admin' ? http.adminMaxBodyBytes : http.maxBodyBytes,
  };
}

/** Why the listener refused or cut a connection (reported to `onRefused`). */
export type ListenerRefusal = 'connection limit' | 'address limit' | 'timeout' | 'body too large';

/**
 * The client a connection's address stands for: an IPv4 address (an IPv4-mapped IPv6 one unwrapped), or
 * an IPv6 address's /64 prefix, the block one host or one customer usually holds whole.
 */
export function addressGroup(address: string | undefined): string {
  if (!address) return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
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
  /**
   * A connection refused (over `maxConnections` or `maxConnectionsPerAddress`) or cut mid-request (a
   * timeout after its first bytes, a declared body over the limit). Must not throw.
   */
  onRefused?: (refusal: ListenerRefusal) => void;
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

/**
 * Node's own answers to a request it cannot parse or that timed out (`socketOnError` in node:http),
 * written here because listening for `clientError` (to count the cut) replaces node's default.
 */
const CLIENT_ERROR_ANSWERS: Record<string, string> = {
  ERR_HTTP_REQUEST_TIMEOUT: 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n',
  HPE_HEADER_OVERFLOW: 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n\r\n',
};
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';

function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  // As node does: answer only when no response of this connection has started.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent)
    socket.write(CLIENT_ERROR_ANSWERS[error.code ?? ''] ?? BAD_REQUEST);
  socket.destroy(error);
}

/** Counts open connections per address group; refuses those over the cap on arrival. */
function capConnectionsPerAddress(
  server: Server,
  max: number,
  onRefused: (r: ListenerRefusal) => void,
): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const group = addressGroup(socket.remoteAddress);
    const count = (open.get(group) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      onRefused('address limit');
      return;
    }
    open.set(group, count);
    socket.once('close', () => {
      const left = (open.get(group) ?? 1) - 1;
      if (left > 0) open.set(group, left);
      else open.delete(group);
    });
  });
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
  const onRefused = (refusal: ListenerRefusal) => {
    try {
      options.onRefused?.(refusal);
    } catch (error) {
      log.warn({ err: error, listener: name }, 'a refused connection could not be counted');
    }
  };
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
        onRefused('body too large');
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
  server.on('drop', () => onRefused('connection limit'));
  if (limits.maxConnectionsPerAddress !== undefined)
    capConnectionsPerAddress(server, limits.maxConnectionsPerAddress, onRefused);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    // A connection that sent nothing is no request (a health check's TCP connect, an idle client).
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead > 0) onRefused('timeout');
    answerClientError(error, socket);
  });
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
