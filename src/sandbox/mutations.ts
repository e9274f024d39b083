/**
 * Every change to the platform's data, shared by the HTTP routes, the control API and the live feed.
 * Changes land in the state (truth) and, for v2 data, in the event log that streams and replay read.
 */
import type { SandboxCore } from './core.ts';
import {
  buildLegacyRecord,
  buildUser,
  connectionEvent,
  offsetOfTimezone,
  SOURCES,
  sourceFor,
} from './generate-data.ts';
import { buildRecord, changeRecord, recordAsOf } from './record-factory.ts';
import { DAY_MS, isoMillis, isoSeconds, parseDay, startOfUtcDay } from './time.ts';
import type { ConnectionEvent, LegacyObject, LegacyRecord, ResourceType, User, V2Record } from './types.ts';

export class NotFoundError extends Error {}
export class ConflictError extends Error {}

export function addUser(
  core: SandboxCore,
  input: { uid?: string; timezone?: string; country_code?: string },
): User {
  const uid = input.uid ?? `uid-${core.prng.hexId().slice(0, 12)}`;
  if (core.state.users.has(uid)) throw new ConflictError(`uid ${uid} has already been taken`);
  const built = buildUser(core.prng, uid, core.clock.now(), core.apiUrl);
  if (input.timezone) {
    built.user.location.timezone = input.timezone;
    built.utcOffset = offsetOfTimezone(input.timezone);
  }
  if (input.country_code) built.user.location.country_code = input.country_code;
  core.state.users.set(uid, built.user);
  core.state.usersChanged();
  core.state.legacyUsers.set(built.legacy._id, built.legacy);
  core.offsets.set(uid, built.utcOffset);
  return built.user;
}

export function deleteUser(core: SandboxCore, uid: string): User {
  const user = core.state.users.get(uid);
  if (!user) throw new NotFoundError(`no user with uid ${uid}`);
  core.state.users.delete(uid);
  core.state.usersChanged();
  return user;
}

function requireUser(core: SandboxCore, uid: string): User {
  const user = core.state.users.get(uid);
  if (!user) throw new NotFoundError(`no user with uid ${uid}`);
  return user;
}

/**
 * The release time of a new version: the clock's now. Two versions within one millisecond would share
 * it, so the clock first moves past the previous version's (the new version must win, and created_at
 * must never lie ahead of the clock that released it).
 */
function nextCreatedAt(core: SandboxCore, previous?: V2Record): string {
  const after = previous ? Date.parse(previous.created_at) + 1 : 0;
  const now = core.clock.now();
  if (after > now) core.clock.advance(after - now);
  return isoMillis(core.clock.now());
}

/** Attempts at a record whose times are not in the future of the clock (random hours of a day). */
const ADD_ATTEMPTS = 6;

/**
 * A new record, released now: `created_at` is the clock's time, and its times are never in the
 * future of the clock. Without `day`, today's record if one can have happened by now (the user's
 * local day may have barely begun), else one of an earlier day; with `day`, that day or an error.
 */
export function addRecord(
  core: SandboxCore,
  input: { uid: string; type: ResourceType; day?: string; source?: string; fields?: Record<string, unknown> },
): V2Record {
  const user = requireUser(core, input.uid);
  const now = core.clock.now();
  const day = input.day ? parseDay(input.day) : startOfUtcDay(now);
  if (day === null) throw new Error(`day must be YYYY-MM-DD, got ${input.day}`);
  for (let attempt = 0; attempt < ADD_ATTEMPTS; attempt++) {
    const dayMs = input.day ? day : day - Math.floor(attempt / 2) * DAY_MS;
    const chosen = input.source
      ? { type: input.source, device: null }
      : (sourceFor(core.prng, user, input.type, dayMs, core.settings.renameDayMs) ?? {
          type: SOURCES.find((s) => s.resources.includes(input.type))?.type ?? 'sandbox_source',
          device: null,
        });
    const record = recordAsOf(
      buildRecord({
        prng: core.prng,
        orgId: core.state.org.orgId,
        user,
        utcOffset: core.offsets.get(user.uid) ?? 0,
        type: input.type,
        dayMs,
        sourceType: chosen.type,
        device: chosen.device,
        createdAtMs: now,
        intradayIntervalMinutes: core.settings.intradayIntervalMinutes,
      }),
      now,
    );
    if (!record) continue;
    Object.assign(record, input.fields ?? {});
    return core.state.putRecord(record).record;
  }
  throw new Error(
    `no ${input.type} record of ${input.day ?? 'today'} can have happened by the sandbox clock (${isoSeconds(now)}); pick an earlier day`,
  );
}

export function updateRecord(core: SandboxCore, id: string, fields?: Record<string, unknown>): V2Record {
  const entry = core.state.records.get(id);
  if (!entry) throw new NotFoundError(`no record with id ${id}`);
  const changed = fields ? { ...entry.record, ...fields } : changeRecord(core.prng, entry.record);
  changed.id = id;
  changed.created_at = nextCreatedAt(core, entry.record);
  return core.state.putRecord(changed).record;
}

export function deleteRecord(core: SandboxCore, id: string): V2Record {
  const entry = core.state.records.get(id);
  if (!entry) throw new NotFoundError(`no record with id ${id}`);
  const createdAt = nextCreatedAt(core, entry.record);
  const keep = core.faults.current.deleteKeepsChecksum;
  return core.state.putRecord(
    { ...entry.record, deleted_at: isoSeconds(Date.parse(createdAt)), created_at: createdAt },
    keep ? { checksum: entry.record.checksum } : {},
  ).record;
}

export function connectSource(core: SandboxCore, uid: string, source: string): ConnectionEvent {
  const user = requireUser(core, uid);
  const now = core.clock.now();
  if (!user.sources.some((s) => s.type === source))
    user.sources.push({ type: source, connected_at: isoSeconds(now) });
  user.updated_at = isoMillis(now);
  core.state.usersChanged();
  const event = connectionEvent(core.prng, core.state.org.orgId, user, source, 'create', now);
  event.created_at = isoSeconds(now);
  core.state.addConnectionEvent(event);
  return event;
}

export function disconnectSource(core: SandboxCore, uid: string, source: string): ConnectionEvent {
  const user = requireUser(core, uid);
  const now = core.clock.now();
  user.sources = user.sources.filter((s) => s.type !== source);
  user.updated_at = isoMillis(now);
  core.state.usersChanged();
  const event = connectionEvent(core.prng, core.state.org.orgId, user, source, 'delete', now);
  event.created_at = isoSeconds(now);
  core.state.addConnectionEvent(event);
  const legacy = core.state.legacyUserByUid(uid);
  core.notifier.disconnect({
    data: {
      type: 'disconnect',
      message: `User disconnected ${source} from ${core.state.org.orgId}`,
      third_party: core.state.org.orgId,
      connected_third_parties: user.sources.length > 0 ? [core.state.legacyOrg.orgId] : [],
      user: { _id: legacy?._id ?? user.id, uid },
    },
  });
  return event;
}

/** The provider's documented push item: the user, the object, the measurement set's time, the app. */
function pushItem(object: LegacyObject, record: LegacyRecord) {
  return {
    _id: record.user_id,
    activity_type: object,
    activity_date: record.timestamp.replace(/Z$/, '+00:00'),
    source: record.source,
  };
}

/** Stores legacy records (new or replaced) and announces them to the registered push URLs. */
export function storeLegacyRecords(core: SandboxCore, object: LegacyObject, records: LegacyRecord[]): void {
  const store = core.state.legacyStore(object);
  for (const record of records) store.set(record._id, record);
  core.notifier.push(records.map((r) => pushItem(object, r)));
}

export function addLegacyRecord(
  core: SandboxCore,
  input: { object: LegacyObject; user_id: string; fields?: Record<string, unknown> },
): LegacyRecord {
  if (!core.state.legacyUsers.has(input.user_id)) throw new NotFoundError(`no legacy user ${input.user_id}`);
  const now = core.clock.now();
  const uid = core.state.legacyUsers.get(input.user_id)?.uid ?? '';
  const record = buildLegacyRecord(
    core.prng,
    input.object,
    input.user_id,
    startOfUtcDay(now),
    core.offsets.get(uid) ?? 0,
    now,
    'sandbox_partner',
  );
  record.last_updated = isoSeconds(now);
  Object.assign(record, input.fields ?? {});
  storeLegacyRecords(core, input.object, [record]);
  return record;
}

export function updateLegacyRecord(
  core: SandboxCore,
  object: LegacyObject,
  id: string,
  fields: Record<string, unknown>,
): LegacyRecord {
  const existing = core.state.legacyStore(object).get(id);
  if (!existing) throw new NotFoundError(`no ${object} record ${id}`);
  const updated: LegacyRecord = {
    ...existing,
    ...fields,
    _id: id,
    last_updated: isoSeconds(core.clock.now()),
  };
  storeLegacyRecords(core, object, [updated]);
  return updated;
}

export function deleteLegacyRecord(core: SandboxCore, object: LegacyObject, id: string): void {
  if (!core.state.legacyStore(object).delete(id)) throw new NotFoundError(`no ${object} record ${id}`);
}

/** A 7-digit PIN valid for 30 minutes of sandbox time. */
export function issuePin(core: SandboxCore, uid?: string): { pin: string; expires_at: string } {
  let pin = '';
  do pin = String(core.prng.int(0, 9_999_999)).padStart(7, '0');
  while (core.state.pins.has(pin));
  const expiresAtMs = core.clock.now() + 30 * 60_000;
  core.state.pins.set(pin, { uid: uid ?? null, expiresAtMs });
  return { pin, expires_at: isoMillis(expiresAtMs) };
}
