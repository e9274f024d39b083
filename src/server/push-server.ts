/**
 * The worker's push listener (`http.pushHost`:`http.pushPort`, loopback:3001 unless configured): the one
 * listener meant to face the internet (usually behind a TLS-terminating proxy), so it answers the push
 * path alone, handing every method there to the push handler (which answers 405 itself), and 404 to
 * anything else: no health, readiness, metrics or queue data here. Hardened like the admin listener
 * (`hardened-server.ts`: timeouts, body limit, connection caps in all and per address, nosniff); every
 * connection it refuses or cuts counts as a refused push (`pushListenerRefusals`). The worker opens it
 * only when push is configured (`src/push/push-admission.ts`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Logger, silentLogger } from '../log/logger.ts';
import {
  admitPushRequest,
  DEFAULT_PUSH_MAX_BODY_BYTES,
  handlePush,
  isPushPath,
  isPushResponse,
  notePushRefusal,
  type PushDeps,
  type PushRefusalKind,
  type PushRequest,
  type PushResponse,
  pushReply,
  refusedTooLarge,
} from '../push/handle-push.ts';
import { LISTENER_REFUSAL_KEY } from '../warehouse/push-fetch-store.ts';
import {
  type ListenerRefusal,
  type RunningServer,
  type ServerLimits,
  startHardenedServer,
} from './hardened-server.ts';
import { readBody, sendJson } from './respond.ts';

export interface PushServerOptions {
  host: string;
  port: number;
  log: Logger;
  limits: ServerLimits;
  /**
   * The push endpoint: `path` (e.g. `/push/v1`) and its handler; `onRefused`, what to do with a
   * connection the listener refused or cut (`pushListenerRefusals`: count it as a refused push).
   */
  push: {
    path: string;
    handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
    onRefused?: (refusal: ListenerRefusal) => void;
  };
}

export function startPushServer(options: PushServerOptions): Promise<RunningServer> {
  const { push } = options;
  return startHardenedServer({
    name: 'push',
    host: options.host,
    port: options.port,
    limits: options.limits,
    log: options.log,
    fix: 'set PUSH_PORT / PUSH_HOST (http.pushPort / http.pushHost) to a free port and an interface of this host',
    ...(push.onRefused ? { onRefused: push.onRefused } : {}),
    handle: async (req, res) => {
      if (!isPushPath(req.url ?? '/', push.path)) return sendJson(res, 404, { error: 'not found' });
      await push.handle(req, res);
    },
  });
}

const LISTENER_REFUSAL_KINDS: Record<ListenerRefusal, PushRefusalKind> = {
  'connection limit': 'connection refused',
  'address limit': 'connection refused',
  timeout: 'request cut',
  'body too large': 'body too large',
};

/**
 * A connection the push listener refused or cut may have carried a notification, of an org it cannot
 * tell: counted as a refusal of every org (src/push/handle-push.ts, "Refusals").
 */
export function pushListenerRefusals(deps: PushDeps): (refusal: ListenerRefusal) => void {
  return (refusal) => {
    notePushRefusal(deps, LISTENER_REFUSAL_KEY, LISTENER_REFUSAL_KINDS[refusal]).catch(() => {});
  };
}

const sendPush = (res: ServerResponse, response: PushResponse): void =>
  sendJson(res, response.status, response.body, response.headers);

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * The node:http adapter of the push endpoint (src/push/handle-push.ts): admits the request before its
 * body is read (a refused request's body is dropped with the connection), reads at most the body limit,
 * then answers what `handlePush` decides.
 */
export async function handlePushRequest(
  req: IncomingMessage,
  res: ServerResponse,
  deps: PushDeps,
): Promise<void> {
  const request: PushRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers };
  const admission = await admitPushRequest(request, deps);
  if (isPushResponse(admission)) {
    admission.headers.connection = 'close';
    return sendPush(res, admission);
  }
  const max = deps.maxBodyBytes ?? DEFAULT_PUSH_MAX_BODY_BYTES;
  const declared = Number(first(req.headers['content-length']));
  if (Number.isFinite(declared) && declared > max)
    return sendPush(res, await refusedTooLarge(deps, admission, max));
  let body: Buffer | undefined;
  try {
    body = await readBody(req, max);
  } catch (error) {
    (deps.log ?? silentLogger).warn({ err: error }, 'push request body could not be read');
    if (!res.headersSent)
      sendPush(res, pushReply(400, { error: 'body could not be read' }, { connection: 'close' }));
    return;
  }
  if (body === undefined) return sendPush(res, await refusedTooLarge(deps, admission, max));
  sendPush(res, await handlePush({ ...request, body: body.toString('utf8') }, deps, admission));
}
