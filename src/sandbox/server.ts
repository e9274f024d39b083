/**
 * The HTTP entry point: routes by base-URL prefix (`/api`, `/streams-api`, `/legacy`, `/__sandbox`),
 * records statistics, and runs the per-request fault gate before a platform route answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { SandboxControl, SandboxTruth } from './control.ts';
import { handleControl } from './control.ts';
import type { SandboxCore } from './core.ts';
import { type RequestContext, sendJson, sendText } from './http-util.ts';
import { handleLegacy } from './legacy-routes.ts';
import { endpointLabel } from './stats.ts';
import { handleStreams } from './streams-routes.ts';
import { handleV2 } from './v2-routes.ts';

export const PREFIXES = {
  api: '/api',
  streams: '/streams-api',
  legacy: '/legacy',
  control: '/__sandbox',
} as const;

type Handler = (core: SandboxCore, ctx: RequestContext) => Promise<void> | void;

const ROUTES: [string, Handler][] = [
  [PREFIXES.api, handleV2],
  [PREFIXES.streams, handleStreams],
  [PREFIXES.legacy, handleLegacy],
];

function tokenOf(query: URLSearchParams): string | null {
  return (
    query.get('token') ??
    query.get('access_token') ??
    query.get('api_key') ??
    query.get('authentication_token')
  );
}

/** Answers the request with a fault when one is due; true when it did. */
async function faultGate(core: SandboxCore, ctx: RequestContext): Promise<boolean> {
  const faults = core.faults;
  const f = faults.current;
  const applies = faults.appliesTo(ctx.path);
  if (applies && f.latencyMs > 0) await delay(f.latencyMs);
  const key = ctx.token ?? 'anonymous';
  // Legacy error bodies carry `code` and `message`; v2 ones a `message`.
  const limited = (message: string) =>
    ctx.baseUrl.endsWith(PREFIXES.legacy) ? { code: 429, message } : { message };
  const now = core.clock.now();
  // The platform's own limit: no Retry-After (none is promised).
  if (core.rateLimit.spend(key, now) !== null) {
    sendJson(ctx, 429, limited('API rate limit exceeded'));
    return true;
  }
  const refusedFor = faults.granted.spend(key, now);
  if (refusedFor !== null) {
    const headers: Record<string, number> = f.grantedRate?.retryAfter
      ? { 'Retry-After': Math.max(1, Math.ceil(refusedFor / 1000)) }
      : {};
    sendJson(ctx, 429, limited('API rate limit exceeded'), headers);
    return true;
  }
  const wait = faults.budget.spend(key, now);
  if (wait !== null) {
    sendJson(ctx, 429, limited('Request budget exceeded'), {
      'Retry-After': Math.max(1, Math.ceil(wait / 1000)),
    });
    return true;
  }
  if (!applies) return false;
  if (faults.roll(f.rate429)) {
    const headers: Record<string, number> =
      f.retryAfterSeconds === null ? {} : { 'Retry-After': f.retryAfterSeconds };
    sendJson(ctx, 429, limited('API rate limit exceeded'), headers);
    return true;
  }
  if (faults.roll(f.rate5xx)) {
    sendJson(ctx, f.status5xx, { status: f.status5xx, error: 'Service Unavailable' });
    return true;
  }
  ctx.truncate = faults.roll(f.truncateRate);
  return false;
}

export function createRequestHandler(core: SandboxCore, control: SandboxControl, truth: SandboxTruth) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const path = url.pathname;
    try {
      if (path === PREFIXES.control || path.startsWith(`${PREFIXES.control}/`)) {
        return await handleControl(
          control,
          truth,
          req,
          res,
          path.slice(PREFIXES.control.length),
          url.searchParams,
        );
      }
      const match = ROUTES.find(([prefix]) => path === prefix || path.startsWith(`${prefix}/`));
      const host = req.headers.host ?? 'localhost';
      const ctx: RequestContext = {
        req,
        res,
        method: req.method ?? 'GET',
        path: match ? path.slice(match[0].length) : path,
        baseUrl: `http://${host}${match?.[0] ?? ''}`,
        query: url.searchParams,
        endpoint: match ? endpointLabel(req.method ?? 'GET', path.slice(match[0].length)) : 'unmatched',
        token: tokenOf(url.searchParams),
        truncate: false,
      };
      // Count a request when its status is written (a client may read the answer before 'close').
      let recorded = false;
      const record = (status: number): void => {
        if (recorded) return;
        recorded = true;
        core.stats.record(ctx.endpoint, status, ctx.token, core.clock.now());
      };
      const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
      res.writeHead = ((status: number, ...rest: unknown[]) => {
        record(status);
        return writeHead(status, ...rest);
      }) as typeof res.writeHead;
      res.on('close', () => record(res.statusCode));
      if (!match) return sendJson(ctx, 404, { message: 'Not Found' });
      if (await faultGate(core, ctx)) return;
      await match[1](core, ctx);
    } catch (error) {
      if (!res.headersSent) {
        const message = error instanceof Error ? error.message : String(error);
        // A malformed percent-encoding in the path is the client's mistake, not ours.
        const status = error instanceof URIError ? 400 : 500;
        sendText(
          { req, res } as RequestContext,
          status,
          `${status === 400 ? 'Bad Request' : 'Internal error'}: ${message}`,
        );
      } else res.destroy();
    }
  };
}
