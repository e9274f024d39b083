/**
 * The sandbox's control API: what tests and the demo may ask of it (clock, faults, feed, mutations), and
 * its routes.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxCore } from './core.ts';
import type { Faults } from './faults.ts';
import { readJsonBody } from './http-util.ts';
import type { LiveFeed } from './live-feed.ts';
import * as m from './mutations.ts';
import { ConflictError, NotFoundError } from './mutations.ts';
import type { Delivery } from './notifier.ts';
import type { StatsSnapshot } from './stats.ts';
import { isoMillis } from './time.ts';
import type {
  ConnectionEvent,
  LegacyObject,
  LegacyRecord,
  LegacyUser,
  ResourceType,
  User,
  V2Record,
} from './types.ts';

/**
 * The programmatic control surface and ground truth (the HTTP control API under `/__sandbox/` maps
 * onto the same operations).
 */
export interface SandboxControl {
  getFaults(): Faults;
  /** Merges switches into the current faults (`reset: true` starts from all-off). */
  setFaults(faults: Partial<Faults>, options?: { reset?: boolean }): Faults;
  resetFaults(): Faults;
  addUser(input?: { uid?: string; timezone?: string; country_code?: string }): User;
  deleteUser(uid: string): User;
  addRecord(input: {
    uid: string;
    type: ResourceType;
    day?: string;
    source?: string;
    fields?: Record<string, unknown>;
  }): V2Record;
  /** A new version: changed content (or `fields`), new checksum, later created_at. */
  updateRecord(id: string, fields?: Record<string, unknown>): V2Record;
  deleteRecord(id: string): V2Record;
  connectSource(uid: string, source: string): ConnectionEvent;
  disconnectSource(uid: string, source: string): ConnectionEvent;
  addLegacyRecord(input: {
    object: LegacyObject;
    user_id: string;
    fields?: Record<string, unknown>;
  }): LegacyRecord;
  updateLegacyRecord(object: LegacyObject, id: string, fields: Record<string, unknown>): LegacyRecord;
  deleteLegacyRecord(object: LegacyObject, id: string): void;
  issuePin(uid?: string): { pin: string; expires_at: string };
  now(): string;
  advanceClock(ms: number): string;
  setClock(at: Date | string): string;
  startLiveFeed(options: { ratePerSecond: number }): void;
  stopLiveFeed(): void;
  registerPushUrl(url: string): void;
  unregisterPushUrl(url: string): void;
  setPartnerNotificationUrl(url: string | null): void;
  /** Resolves when every notification sent so far has been answered or failed. */
  flushNotifications(): Promise<void>;
  stats(): StatsSnapshot;
  resetStats(): void;
}

export interface SandboxTruth {
  users(): User[];
  /** Current version of every v2 record (deleted ones carry deleted_at). */
  records(filter?: { type?: ResourceType; uid?: string }): V2Record[];
  /** Every connection event, oldest first (those before 2025-07-01 are not served). */
  connections(): ConnectionEvent[];
  /** The event log streams and replay read, in order. */
  events(): { seq: number; kind: string; created_at: string; payload: unknown }[];
  legacyUsers(): LegacyUser[];
  legacyRecords(object?: LegacyObject): (LegacyRecord & { object: LegacyObject })[];
  streams(): { id: string; cursor: number; members: number; last_disconnect: string | null }[];
  deliveries(): Delivery[];
}

export function createControl(
  core: SandboxCore,
  feed: LiveFeed,
): { control: SandboxControl; truth: SandboxTruth } {
  const control: SandboxControl = {
    getFaults: () => core.faults.current,
    // Streams are pumped only when something happens; ending `silentStream` is such a moment, or
    // the events logged during the silence would wait for the next new event.
    setFaults: (faults, options = {}) => {
      const set = core.faults.set(faults, options.reset === true);
      core.streams.onEvent();
      return set;
    },
    resetFaults: () => {
      const set = core.faults.set({}, true);
      core.streams.onEvent();
      return set;
    },
    addUser: (input = {}) => m.addUser(core, input),
    deleteUser: (uid) => m.deleteUser(core, uid),
    addRecord: (input) => m.addRecord(core, input),
    updateRecord: (id, fields) => m.updateRecord(core, id, fields),
    deleteRecord: (id) => m.deleteRecord(core, id),
    connectSource: (uid, source) => m.connectSource(core, uid, source),
    disconnectSource: (uid, source) => m.disconnectSource(core, uid, source),
    addLegacyRecord: (input) => m.addLegacyRecord(core, input),
    updateLegacyRecord: (object, id, fields) => m.updateLegacyRecord(core, object, id, fields),
    deleteLegacyRecord: (object, id) => m.deleteLegacyRecord(core, object, id),
    issuePin: (uid) => m.issuePin(core, uid),
    now: () => isoMillis(core.clock.now()),
    advanceClock: (ms) => {
      core.clock.advance(ms);
      return isoMillis(core.clock.now());
    },
    setClock: (at) => {
      core.clock.set(typeof at === 'string' ? Date.parse(at) : at.getTime());
      return isoMillis(core.clock.now());
    },
    startLiveFeed: ({ ratePerSecond }) => feed.start(ratePerSecond),
    stopLiveFeed: () => feed.stop(),
    registerPushUrl: (url) => {
      core.notifier.pushUrls.add(url);
    },
    unregisterPushUrl: (url) => {
      core.notifier.pushUrls.delete(url);
    },
    setPartnerNotificationUrl: (url) => {
      core.notifier.partnerNotificationUrl = url;
    },
    flushNotifications: () => core.notifier.flush(),
    stats: () => core.stats.snapshot(),
    resetStats: () => core.stats.reset(),
  };
  const truth: SandboxTruth = {
    users: () => [...core.state.users.values()],
    records: (filter = {}) =>
      [...core.state.records.values()]
        .map((e) => e.record)
        .filter(
          (r) => (!filter.type || r.type === filter.type) && (!filter.uid || r.user.uid === filter.uid),
        ),
    connections: () => core.state.connections.map((c) => c.event),
    events: () =>
      core.state.log.map((e) => ({
        seq: e.seq,
        kind: e.kind,
        created_at: isoMillis(e.createdAtMs),
        payload: JSON.parse(e.json) as unknown,
      })),
    legacyUsers: () => [...core.state.legacyUsers.values()],
    legacyRecords: (object) =>
      [...core.state.legacyRecords.entries()]
        .filter(([o]) => !object || o === object)
        .flatMap(([o, store]) => [...store.values()].map((r) => ({ ...r, object: o }))),
    streams: () => core.streams.checkpoints(),
    deliveries: () => core.notifier.deliveries,
  };
  return { control, truth };
}

/**
 * HTTP control API under `/__sandbox/` (JSON in and out; not part of the platform, no auth). Each route
 * calls the same operation as the programmatic `control`/`truth` objects. Errors: 404 for unknown
 * ids, 409 for a duplicate uid, 400 for a bad body, as `{ "error": "..." }`.
 */
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
