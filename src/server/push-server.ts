/**
 * The worker's push listener (`http.pushHost`:`http.pushPort`, loopback:3001 unless configured): the one
 * listener meant to face the internet (usually behind a TLS-terminating proxy), so it answers the push
 * path alone, handing every method there to the push handler (which answers 405 itself), and 404 to
 * anything else: no health, readiness, metrics or queue data here. Hardened like the admin listener
 * (`hardened-server.ts`: timeouts, body limit, connection cap, nosniff). The worker opens it only when
 * push is configured (`src/push/push-configured.ts`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log/logger.ts';
import { isPushPath } from '../push/handle-push.ts';
import { type RunningServer, type ServerLimits, startHardenedServer } from './hardened-server.ts';
import { sendJson } from './respond.ts';

export interface PushServerOptions {
  host: string;
  port: number;
  log: Logger;
  limits: ServerLimits;
  /** The push endpoint: `path` (e.g. `/push/v1`) and its handler. */
  push: { path: string; handle(req: IncomingMessage, res: ServerResponse): Promise<void> };
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
    handle: async (req, res) => {
      if (!isPushPath(req.url ?? '/', push.path)) return sendJson(res, 404, { error: 'not found' });
      await push.handle(req, res);
    },
  });
}
