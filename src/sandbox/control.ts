/**
 * The programmatic control surface and ground truth (the HTTP control API under `/__sandbox/` maps
 * onto the same operations).
 */
import type { SandboxCore } from './core.ts';
import type { Faults } from './faults.ts';
import type { LiveFeed } from './live-feed.ts';
import * as m from './mutations.ts';
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
