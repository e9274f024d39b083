/**
 * The sandbox's single source of truth: users, the current version of every v2 record, connection
 * events, the ordered event log that streams and replay read, and the legacy (v1) store. Every route
 * reads from here and every control operation writes here, so what is served always matches the truth.
 *
 * Record JSON is rendered once when a version is stored and served as a string, which keeps 1,000-record
 * pages cheap.
 */
import { computeChecksum } from './record-factory.ts';
import { utcDay } from './time.ts';
import type {
  ConnectionEvent,
  LegacyObject,
  LegacyRecord,
  LegacyUser,
  ResourceType,
  User,
  V2Record,
} from './types.ts';

export interface RecordEntry {
  record: V2Record;
  json: string;
  /** UTC date of start_time: the day the retrieval window matches on (`windowBy: 'utc'`). */
  startDay: string;
  /** The user's local date of start_time (start_time shifted by utc_offset): `windowBy: 'local'`. */
  localDay: string;
}

export interface LogEvent {
  seq: number;
  /** created_at of the payload, never earlier than the previous event's (the log stays sorted). */
  createdAtMs: number;
  kind: ResourceType | 'connection';
  json: string;
  /** For a changed record: the JSON of the version it replaced (replay's older-version fault). */
  prevJson?: string;
}

export interface Organization {
  orgId: string;
  token: string;
}

type Listener = (event: LogEvent) => void;

export class SandboxState {
  readonly org: Organization;
  /** A valid token of another organization: using it on `org` gives the spec's 401. */
  readonly otherOrg: Organization;
  readonly legacyOrg: Organization;
  readonly users = new Map<string, User>();
  readonly records = new Map<string, RecordEntry>();
  readonly byUserType = new Map<string, Map<ResourceType, RecordEntry[]>>();
  readonly connections: { event: ConnectionEvent; json: string; createdAtMs: number }[] = [];
  readonly log: LogEvent[] = [];
  readonly legacyUsers = new Map<string, LegacyUser>();
  readonly legacyRecords = new Map<LegacyObject, Map<string, LegacyRecord>>();
  readonly pins = new Map<string, { uid: string | null; expiresAtMs: number }>();
  private readonly listeners = new Set<Listener>();
  /** Bumped by `usersChanged`: a sorted listing of an older version is stale. */
  private usersVersion = 0;
  private readonly sortedListings = new Map<string, { version: number; users: User[] }>();

  constructor(org: Organization, otherOrg: Organization, legacyOrg: Organization) {
    this.org = org;
    this.otherOrg = otherOrg;
    this.legacyOrg = legacyOrg;
  }

  onEvent(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Every change to `users` or to a user's fields calls this, so the listing's sort is redone. */
  usersChanged(): void {
    this.usersVersion++;
  }

  /**
   * The users in the order `sort` gives, sorted once per version of the users and per `sortKey`:
   * a listing of 100,000 users is read a page at a time, and sorting them again for each of its
   * 100 pages made one listing take 13 minutes (bench/population.ts).
   */
  sortedUsers(sortKey: string, sort: (users: User[]) => User[]): User[] {
    const cached = this.sortedListings.get(sortKey);
    if (cached?.version === this.usersVersion) return cached.users;
    const users = sort([...this.users.values()]);
    this.sortedListings.set(sortKey, { version: this.usersVersion, users });
    return users;
  }

  /** Stores a version of a record (new or changed) and, unless loading in bulk, logs it. */
  /** `checksum`: keep this one instead of hashing the content (a delete under `deleteKeepsChecksum`). */
  putRecord(record: V2Record, options: { log?: boolean; checksum?: string } = {}): RecordEntry {
    record.checksum = options.checksum ?? computeChecksum(record);
    const json = JSON.stringify(record);
    const previous = this.records.get(record.id);
    const startMs = Date.parse(record.start_time);
    const entry: RecordEntry = {
      record,
      json,
      startDay: utcDay(startMs),
      localDay: utcDay(startMs + (record.utc_offset ?? 0) * 1000),
    };
    this.records.set(record.id, entry);
    let perType = this.byUserType.get(record.user.uid);
    if (!perType) {
      perType = new Map();
      this.byUserType.set(record.user.uid, perType);
    }
    const list = perType.get(record.type) ?? [];
    if (previous) {
      const index = list.indexOf(previous);
      if (index >= 0) list.splice(index, 1);
    }
    insertSorted(list, entry);
    perType.set(record.type, list);
    if (options.log !== false) {
      this.appendEvent(Date.parse(record.created_at), record.type, json, previous?.json);
    }
    return entry;
  }

  addConnectionEvent(event: ConnectionEvent, options: { log?: boolean } = {}): void {
    const json = JSON.stringify(event);
    const createdAtMs = Date.parse(event.created_at);
    this.connections.push({ event, json, createdAtMs });
    if (options.log !== false) this.appendEvent(createdAtMs, 'connection', json);
  }

  appendEvent(createdAtMs: number, kind: LogEvent['kind'], json: string, prevJson?: string): void {
    // Keep the log sorted for logIndexAt even if the clock was moved back (the JSON keeps the real time).
    const last = this.log.at(-1)?.createdAtMs ?? createdAtMs;
    const event: LogEvent = { seq: this.log.length, createdAtMs: Math.max(last, createdAtMs), kind, json };
    if (prevJson !== undefined) event.prevJson = prevJson;
    this.log.push(event);
    for (const listener of this.listeners) listener(event);
  }

  /** After bulk generation: order the log and connection events by created_at, then number them. */
  sealBulkLoad(events: Omit<LogEvent, 'seq'>[]): void {
    events.sort((a, b) => a.createdAtMs - b.createdAtMs);
    for (const e of events) this.log.push({ ...e, seq: this.log.length });
    this.connections.sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  /** First log position whose event was created at or after `ms`. */
  logIndexAt(ms: number): number {
    let lo = 0;
    let hi = this.log.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.log[mid] as LogEvent).createdAtMs < ms) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  recordsFor(uid: string, type: ResourceType): RecordEntry[] {
    return this.byUserType.get(uid)?.get(type) ?? [];
  }

  legacyStore(object: LegacyObject): Map<string, LegacyRecord> {
    let store = this.legacyRecords.get(object);
    if (!store) {
      store = new Map();
      this.legacyRecords.set(object, store);
    }
    return store;
  }

  legacyUserByToken(token: string): LegacyUser | undefined {
    for (const user of this.legacyUsers.values()) if (user.access_token === token) return user;
    return undefined;
  }

  legacyUserByUid(uid: string): LegacyUser | undefined {
    for (const user of this.legacyUsers.values()) if (user.uid === uid) return user;
    return undefined;
  }
}

function insertSorted(list: RecordEntry[], entry: RecordEntry): void {
  const key = entry.record.start_time;
  let i = list.length;
  while (i > 0 && (list[i - 1] as RecordEntry).record.start_time > key) i--;
  list.splice(i, 0, entry);
}
