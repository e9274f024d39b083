/**
 * HTTP control API under `/__sandbox/` (JSON in and out; not part of the platform, no auth). Each route
 * calls the same operation as the programmatic `control`/`truth` objects. Errors: 404 for unknown
 * ids, 409 for a duplicate uid, 400 for a bad body, as `{ "error": "..." }`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxControl, SandboxTruth } from './control.ts';
import { readJsonBody } from './http-util.ts';
import { ConflictError, NotFoundError } from './mutations.ts';
import type { LegacyObject } from './types.ts';

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body ?? {});
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export async function handleControl(
  control: SandboxControl,
  truth: SandboxTruth,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: URLSearchParams,
): Promise<void> {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const method = req.method ?? 'GET';
  const body = method === 'GET' ? {} : await readJsonBody(req);
  if (body === null) return reply(res, 400, { error: 'body must be a JSON object' });
  const str = (key: string): string => String(body[key] ?? '');
  const route = `${method} /${parts.join('/')}`;
  try {
    if (parts[0] === 'truth' && method === 'GET') {
      const what = parts[1];
      if (what === 'users') return reply(res, 200, truth.users());
      if (what === 'records') {
        const type = query.get('type') ?? undefined;
        const uid = query.get('uid') ?? undefined;
        return reply(res, 200, truth.records({ type: type as never, uid }));
      }
      if (what === 'connections') return reply(res, 200, truth.connections());
      if (what === 'events') return reply(res, 200, truth.events());
      if (what === 'legacy-users') return reply(res, 200, truth.legacyUsers());
      if (what === 'legacy-records') {
        return reply(
          res,
          200,
          truth.legacyRecords((query.get('object') ?? undefined) as LegacyObject | undefined),
        );
      }
      if (what === 'streams') return reply(res, 200, truth.streams());
      if (what === 'deliveries') return reply(res, 200, truth.deliveries());
    }
    switch (route) {
      case 'GET /stats':
        return reply(res, 200, control.stats());
      case 'POST /stats/reset':
        control.resetStats();
        return reply(res, 200, control.stats());
      case 'GET /faults':
        return reply(res, 200, control.getFaults());
      case 'POST /faults': {
        const { reset, ...faults } = body;
        return reply(res, 200, control.setFaults(faults, { reset: reset === true }));
      }
      case 'POST /users':
        return reply(res, 201, control.addUser(body));
      case 'POST /records':
        return reply(res, 201, control.addRecord(body as never));
      case 'POST /connections':
        return reply(
          res,
          201,
          body.action === 'delete'
            ? control.disconnectSource(str('uid'), str('source'))
            : control.connectSource(str('uid'), str('source')),
        );
      case 'POST /legacy/records':
        return reply(res, 201, control.addLegacyRecord(body as never));
      case 'POST /pins':
        return reply(res, 201, control.issuePin(typeof body.uid === 'string' ? body.uid : undefined));
      case 'GET /clock':
        return reply(res, 200, { now: control.now() });
      case 'POST /clock': {
        const now =
          typeof body.now === 'string'
            ? control.setClock(body.now)
            : control.advanceClock(Number(body.advanceMs ?? 0));
        return reply(res, 200, { now });
      }
      case 'POST /live-feed':
        control.startLiveFeed({ ratePerSecond: Number(body.ratePerSecond ?? 1) });
        return reply(res, 200, { running: true });
      case 'DELETE /live-feed':
        control.stopLiveFeed();
        return reply(res, 200, { running: false });
      case 'POST /push-urls':
        control.registerPushUrl(str('url'));
        return reply(res, 201, { url: str('url') });
      case 'DELETE /push-urls':
        control.unregisterPushUrl(str('url'));
        return reply(res, 200, { url: str('url') });
      case 'PUT /partner-notification-url':
        control.setPartnerNotificationUrl(typeof body.url === 'string' ? body.url : null);
        return reply(res, 200, { url: body.url ?? null });
      case 'POST /notifications/flush':
        await control.flushNotifications();
        return reply(res, 200, truth.deliveries());
    }
    if (parts[0] === 'users' && parts.length === 2 && method === 'DELETE') {
      return reply(res, 200, control.deleteUser(parts[1] as string));
    }
    if (parts[0] === 'records' && parts.length === 2) {
      const id = parts[1] as string;
      if (method === 'PUT') return reply(res, 200, control.updateRecord(id, body.fields as never));
      if (method === 'DELETE') return reply(res, 200, control.deleteRecord(id));
    }
    if (parts[0] === 'legacy' && parts[1] === 'records' && parts.length === 4) {
      const object = parts[2] as LegacyObject;
      const id = parts[3] as string;
      if (method === 'PUT') return reply(res, 200, control.updateLegacyRecord(object, id, body));
      if (method === 'DELETE') {
        control.deleteLegacyRecord(object, id);
        return reply(res, 200, {});
      }
    }
    reply(res, 404, { error: `no control route ${route}` });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof NotFoundError) return reply(res, 404, { error: message });
    if (error instanceof ConflictError) return reply(res, 409, { error: message });
    reply(res, 400, { error: message });
  }
}
