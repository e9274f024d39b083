/** Per-request context and response helpers shared by every route module. */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  /** Path below the base-URL prefix (`/api`, `/streams-api`, `/legacy`). */
  path: string;
  /** Base URL of the API the request came in on, e.g. `http://127.0.0.1:P/legacy`. */
  baseUrl: string;
  query: URLSearchParams;
  /** Statistics key: method and path with ids replaced. */
  endpoint: string;
  /** Credential found in the query string, if any. */
  token: string | null;
  /** Set by the fault gate: cut this response off mid-way. */
  truncate: boolean;
}

const JSON_TYPE = 'application/json; charset=utf-8';

function withServiceVersion(ctx: RequestContext, headers: Record<string, string | number>): void {
  // Legacy v1 pins a version with the Service-Version header; echo it back.
  const version = ctx.req.headers['service-version'];
  if (typeof version === 'string') headers['Service-Version'] = version;
}

export function send(
  ctx: RequestContext,
  status: number,
  body: string,
  contentType: string,
  extraHeaders: Record<string, string | number> = {},
): void {
  const buf = Buffer.from(body);
  const headers: Record<string, string | number> = {
    'Content-Type': contentType,
    'Content-Length': buf.length,
    ...extraHeaders,
  };
  withServiceVersion(ctx, headers);
  ctx.res.writeHead(status, headers);
  if (ctx.truncate && buf.length > 1) {
    // Promise the whole body, deliver half, then drop the connection.
    ctx.res.write(buf.subarray(0, Math.floor(buf.length / 2)), () => ctx.req.socket.destroy());
    return;
  }
  ctx.res.end(buf);
}

/** `body` may be pre-serialized JSON (record pages are assembled from cached strings). */
export function sendJson(
  ctx: RequestContext,
  status: number,
  body: unknown,
  extraHeaders: Record<string, string | number> = {},
): void {
  send(ctx, status, typeof body === 'string' ? body : JSON.stringify(body), JSON_TYPE, extraHeaders);
}

export function sendText(ctx: RequestContext, status: number, text: string): void {
  send(ctx, status, text, 'text/plain; charset=utf-8');
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Parsed JSON body, `{}` when empty, or null when it is not JSON. */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown> | null> {
  const text = await readBody(req);
  if (text.trim() === '') return {};
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** Integer query parameter: the default when absent, null when present but not a non-negative integer. */
export function intParam(query: URLSearchParams, name: string, fallback: number): number | null {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) return null;
  return Number(raw);
}
