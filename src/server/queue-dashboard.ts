/**
 * bull-board, the dashboard BullMQ operators already know, for the worker's queue at `/queues` on the
 * admin listener. Read-only unless `http.dashboardWritable` (then retry, promote and clean work too).
 * bull-board's Express adapter is used because an Express app is itself a node:http request listener:
 * the admin server hands it every request under the base path, with no second server or framework.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';

export const QUEUE_DASHBOARD_PATH = '/queues';

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

export function createQueueDashboard(queue: Queue, options: { writable: boolean }): RequestListener {
  const serverAdapter = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: [
      new BullMQAdapter(queue, {
        readOnlyMode: !options.writable,
        allowRetries: options.writable,
        description: 'validic-sync jobs: polls, backfill windows, reconciliation, legacy, push fetches',
      }),
    ],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'validic-sync' } },
  });
  // The router serves paths relative to its mount point, as Express's app.use(base, router) would.
  const router = serverAdapter.getRouter() as RequestListener &
    ((req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void);
  return (req, res) => {
    const original = req.url ?? '/';
    req.url = original.slice(QUEUE_DASHBOARD_PATH.length) || '/';
    router(req, res, (err?: unknown) => {
      req.url = original;
      if (res.headersSent) return;
      res.writeHead(err ? 500 : 404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(err ? 'dashboard error\n' : 'not found\n');
    });
  };
}
