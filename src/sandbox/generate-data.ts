/**
 * The seeded initial data set: users, v2 records of every resource type (some changed, some deleted),
 * connection events and legacy records over `days` days ending at the clock anchor.
 */
import { buildLegacyRecord } from './generate-legacy.ts';
import { type BuiltUser, buildUser } from './generate-users.ts';
import { createPrng, type Prng } from './prng.ts';
import { buildRecord, changeRecord, recordAsOf } from './record-factory.ts';
import { RENAMED_SOURCES, sourceInfo } from './sources.ts';
import type { LogEvent, SandboxState } from './state.ts';
import { DAY_MS, isoMillis, isoSeconds, startOfUtcDay } from './time.ts';
import {
  type ConnectionEvent,
  LEGACY_OBJECTS,
  type LegacyObject,
  type ResourceType,
  type User,
} from './types.ts';

export interface GenerateOptions {
  seed: number;
  users: number;
  days: number;
  nowMs: number;
  /** Expected records per user per day for each resource type. */
  mix: Record<ResourceType, number>;
  intradayIntervalMinutes: number;
  baseUrl: string;
  /** The fault switch of the same name, set from the start: seeded deletes keep their checksum too. */
  deleteKeepsChecksum?: boolean;
}

export const DEFAULT_MIX: Record<ResourceType, number> = {
  measurement: 1,
  nutrition: 2.5,
  intraday: 1,
  summary: 1,
  workout: 0.5,
  sleep: 1,
  cgm: 1,
};

const LEGACY_MIX: Record<LegacyObject, number> = {
  routine: 1,
  fitness: 0.5,
  nutrition: 0.5,
  sleep: 0.6,
  weight: 0.3,
  diabetes: 0.1,
  biometrics: 0.15,
  tobacco_cessation: 0.05,
};

const MINUTE = 60_000;
const HOUR = 3_600_000;

function count(prng: Prng, mean: number): number {
  return Math.floor(mean) + (prng.chance(mean - Math.floor(mean)) ? 1 : 0);
}

/** The source a user's record of `type` comes from on `dayMs`, with the pre-rename name if it applies. */
export function sourceFor(
  prng: Prng,
  user: User,
  type: ResourceType,
  dayMs: number,
  renameDayMs: number,
): { type: string; device: { name: string; type: string } | null } | null {
  const candidates = user.sources.filter((s) => sourceInfo(s.type)?.resources.includes(type));
  if (candidates.length === 0) return null;
  const chosen = prng.pick(candidates).type;
  const info = sourceInfo(chosen);
  const renamed = RENAMED_SOURCES[chosen];
  return { type: renamed && dayMs < renameDayMs ? renamed : chosen, device: info?.device ?? null };
}

export function connectionEvent(
  prng: Prng,
  orgId: string,
  user: User,
  sourceType: string,
  action: 'create' | 'delete',
  atMs: number,
): ConnectionEvent {
  const base = {
    action,
    id: prng.hexId(),
    user: { uid: user.uid, user_id: user.id, organization_id: orgId },
    source: { type: sourceType },
    created_at: isoSeconds(atMs + prng.int(1, 30) * 1000),
    event_time: isoSeconds(atMs),
  };
  if (action === 'delete') {
    return {
      ...base,
      deleted_at: isoSeconds(atMs),
      deleted_reason: prng.pick(['user_disconnected', 'revoked']),
    };
  }
  // profile and credentials are optional and not available from every source.
  return prng.chance(0.6)
    ? {
        ...base,
        profile: { display_name: `user ${user.uid.slice(-4)}` },
        credentials: { scopes: ['activity', 'sleep'] },
      }
    : base;
}

export function generateData(
  state: SandboxState,
  options: GenerateOptions,
): { built: BuiltUser[]; prng: Prng } {
  const prng = createPrng(options.seed);
  const orgId = state.org.orgId;
  const today = startOfUtcDay(options.nowMs);
  const firstDay = today - (options.days - 1) * DAY_MS;
  const renameDay = firstDay + Math.floor(options.days / 2) * DAY_MS;
  const latest = options.nowMs - 1000;
  const events: Omit<LogEvent, 'seq'>[] = [];
  const built: BuiltUser[] = [];

  for (let i = 0; i < options.users; i++) {
    const createdMs = firstDay - prng.int(0, 3) * DAY_MS - prng.int(1, 20) * HOUR;
    const b = buildUser(prng, `uid-${prng.hexId().slice(0, 12)}`, createdMs, options.baseUrl);
    built.push(b);
    state.users.set(b.user.uid, b.user);
    state.usersChanged();
    state.legacyUsers.set(b.legacy._id, b.legacy);

    for (const s of b.user.sources) {
      if (!sourceInfo(s.type)?.reportsConnections) continue;
      const connectedAt = createdMs + prng.int(5, 600) * MINUTE;
      const add = (e: ConnectionEvent): void => {
        state.addConnectionEvent(e, { log: false });
        events.push({ createdAtMs: Date.parse(e.created_at), kind: 'connection', json: JSON.stringify(e) });
      };
      add(connectionEvent(prng, orgId, b.user, s.type, 'create', connectedAt));
      if (prng.chance(0.2)) {
        const droppedAt = Math.min(latest - HOUR, connectedAt + prng.int(1, options.days) * DAY_MS);
        add(connectionEvent(prng, orgId, b.user, s.type, 'delete', droppedAt));
        if (prng.chance(0.5))
          add(connectionEvent(prng, orgId, b.user, s.type, 'create', droppedAt + 30 * MINUTE));
      }
    }

    for (let day = firstDay; day <= today; day += DAY_MS) {
      for (const [type, mean] of Object.entries(options.mix) as [ResourceType, number][]) {
        for (let n = count(prng, mean); n > 0; n--) {
          const source = sourceFor(prng, b.user, type, day, renameDay);
          if (!source) continue;
          const built = buildRecord({
            prng,
            orgId,
            user: b.user,
            utcOffset: b.utcOffset,
            type,
            dayMs: day,
            sourceType: source.type,
            device: source.device,
            createdAtMs: 0,
            intradayIntervalMinutes: options.intradayIntervalMinutes,
          });
          // Nothing in the future of the clock: today's series end at `latest`, later records wait.
          const record = recordAsOf(built, latest);
          if (!record) continue;
          const endMs = Date.parse(record.end_time);
          const createdMs = Math.min(latest, endMs + prng.int(5, 180) * MINUTE);
          record.created_at = isoMillis(createdMs);
          const first = state.putRecord(record, { log: false });
          events.push({ createdAtMs: createdMs, kind: type, json: first.json });
          // A few records change later (re-sync) or get deleted: the log keeps every version.
          const roll = prng.next();
          if (roll < 0.05 && createdMs < latest - HOUR) {
            const laterMs = Math.min(latest, createdMs + prng.int(10, 48 * 60) * MINUTE);
            const deleted = roll < 0.02;
            const next = deleted
              ? { ...record, deleted_at: isoSeconds(laterMs), created_at: isoMillis(laterMs) }
              : { ...changeRecord(prng, record), created_at: isoMillis(laterMs) };
            const keep = deleted && options.deleteKeepsChecksum === true;
            const second = state.putRecord(
              next,
              keep ? { log: false, checksum: record.checksum } : { log: false },
            );
            events.push({ createdAtMs: laterMs, kind: type, json: second.json, prevJson: first.json });
          }
        }
      }
      for (const object of LEGACY_OBJECTS) {
        for (let n = count(prng, LEGACY_MIX[object]); n > 0; n--) {
          let lastUpdated = day + prng.int(8, 30) * HOUR - b.utcOffset * 1000;
          if (prng.chance(0.1)) lastUpdated += prng.int(2, 5) * DAY_MS; // late sync
          if (lastUpdated > latest) lastUpdated = latest;
          const source = object === 'routine' || object === 'fitness' ? 'fitbit' : 'sandbox_partner';
          const rec = buildLegacyRecord(prng, object, b.legacy._id, day, b.utcOffset, lastUpdated, source);
          if (Date.parse(rec.timestamp) > latest) continue;
          state.legacyStore(object).set(rec._id, rec);
        }
      }
    }
  }
  state.sealBulkLoad(events);
  return { built, prng };
}
