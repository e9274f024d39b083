/**
 * The sandbox's population, generated from its seed: users with their sources, their v2 history, and
 * their v1 (legacy) records.
 */
import { createPrng, type Prng } from './prng.ts';
import { buildRecord, changeRecord, recordAsOf } from './record-factory.ts';
import type { LogEvent, SandboxState } from './state.ts';
import { DAY_MS, formatOffset, isoMillis, isoSeconds, startOfUtcDay } from './time.ts';
import {
  type ConnectionEvent,
  LEGACY_OBJECTS,
  type LegacyObject,
  type LegacyRecord,
  type LegacyUser,
  type ResourceType,
  type User,
} from './types.ts';

/**
 * The seeded initial data set: users, v2 records of every resource type (some changed, some deleted),
 * connection events and legacy records over `days` days ending at the clock anchor.
 */
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

/** Builds users (v2 profile + the matching legacy v1 user) from the seeded PRNG. */
export interface BuiltUser {
  user: User;
  utcOffset: number;
  legacy: LegacyUser;
}

export function buildUser(prng: Prng, uid: string, createdAtMs: number, baseUrl: string): BuiltUser {
  const zone = prng.pick(TIMEZONES);
  const id = prng.hexId();
  const marketplaceToken = prng.hexId();
  // Every user has one wearable and a couple of others; some have a CGM or only mobile-SDK data.
  const wearable = prng.pick(['fitbit', 'garmin_connect']);
  const others = SOURCES.map((s) => s.type).filter(
    (t) => t !== 'fitbit' && t !== 'garmin_connect' && prng.chance(0.4),
  );
  const sources = [wearable, 'withings', ...others.filter((t) => t !== 'withings')];
  const created = isoMillis(createdAtMs);
  return {
    utcOffset: zone.offset,
    user: {
      id,
      uid,
      marketplace: { token: marketplaceToken, url: `${baseUrl}/marketplace/${marketplaceToken}` },
      mobile: { token: prng.hexId().slice(0, 12) },
      location: { timezone: zone.timezone, country_code: zone.country_code },
      status: 'active',
      sources: sources.map((type) => ({ type, connected_at: created })),
      created_at: created,
      updated_at: created,
    },
    legacy: { _id: id, uid, access_token: prng.hexId() + prng.hexId(), created_at: created },
  };
}

export function offsetOfTimezone(timezone: string): number {
  return [...TIMEZONES, ...EXTREME_TIMEZONES].find((z) => z.timezone === timezone)?.offset ?? 0;
}

/** Builds legacy (v1) records of every standard object from the seeded PRNG. */

const SOURCE_NAMES: Record<string, string> = {
  fitbit: 'Fitbit',
  garmin_connect: 'Garmin Connect',
  withings: 'Withings',
  omron: 'Omron',
  myfitnesspal: 'MyFitnessPal',
  dexcom: 'Dexcom',
  sandbox_partner: 'Sandbox Partner App',
};

export function sourceDisplayName(source: string): string {
  return SOURCE_NAMES[source] ?? source;
}

/** Object-specific fields (the spec shows fitness, routine and nutrition; the others follow v1 docs). */
export function legacyFields(prng: Prng, object: LegacyObject, timestampMs: number): Record<string, unknown> {
  switch (object) {
    case 'fitness':
      return {
        type: prng.pick(['Running', 'Walking', 'Cycling', 'Swimming']),
        intensity: prng.pick(['low', 'medium', 'high']),
        start_time: isoSeconds(timestampMs),
        distance: prng.int(500, 15000),
        duration: prng.int(600, 5400),
        calories: prng.int(80, 900),
        activity_category: prng.pick(['Cardiovascular', 'Strength', 'Walking']),
      };
    case 'routine':
      return {
        steps: prng.int(1000, 18000),
        distance: prng.int(800, 14000),
        floors: prng.int(0, 25),
        elevation: prng.int(0, 90),
        calories_burned: prng.int(1500, 3500),
      };
    case 'nutrition':
      return {
        calories: prng.int(100, 900),
        carbohydrates: prng.int(5, 120),
        fat: prng.int(1, 60),
        fiber: prng.int(0, 15),
        protein: prng.int(1, 60),
        sodium: prng.int(10, 2000),
        water: prng.int(0, 750),
        meal: prng.pick(['Breakfast', 'Lunch', 'Dinner', 'Snack']),
      };
    case 'sleep':
      return {
        total_sleep: prng.int(300, 540),
        awake: prng.int(0, 60),
        deep: prng.int(40, 120),
        light: prng.int(100, 300),
        rem: prng.int(40, 120),
        times_woken: prng.int(0, 6),
      };
    case 'weight': {
      const weight = 55 + prng.int(0, 500) / 10;
      return { weight, height: 170, bmi: Number((weight / 2.89).toFixed(1)), fat_percent: prng.int(10, 35) };
    }
    case 'diabetes':
      return {
        blood_glucose: prng.int(70, 190),
        relationship_to_meal: prng.pick(['before', 'after', 'random', 'fasting']),
        insulin: prng.int(0, 12),
      };
    case 'biometrics':
      return {
        systolic: prng.int(105, 150),
        diastolic: prng.int(65, 95),
        resting_heartrate: prng.int(50, 90),
        temperature: 36 + prng.int(0, 15) / 10,
      };
    case 'tobacco_cessation':
      return {
        cigarettes_allowed: prng.int(0, 10),
        cigarettes_smoked: prng.int(0, 10),
        cravings: prng.int(0, 8),
      };
  }
}

export function buildLegacyRecord(
  prng: Prng,
  object: LegacyObject,
  userId: string,
  dayMs: number,
  utcOffsetSeconds: number,
  lastUpdatedMs: number,
  source: string,
): LegacyRecord {
  // Routine aggregates a day: its timestamp is local midnight expressed in UTC.
  const timestampMs =
    object === 'routine'
      ? dayMs - utcOffsetSeconds * 1000
      : dayMs + prng.int(6, 21) * HOUR - utcOffsetSeconds * 1000;
  const id = prng.hexId();
  return {
    _id: id,
    user_id: userId,
    timestamp: isoSeconds(timestampMs),
    utc_offset: formatOffset(utcOffsetSeconds),
    activity_id:
      object === 'routine'
        ? `routine-${userId.slice(0, 8)}-${isoSeconds(timestampMs).slice(0, 10)}`
        : id.slice(0, 16),
    source,
    source_name: sourceDisplayName(source),
    validated: prng.chance(0.8),
    last_updated: isoSeconds(Math.max(lastUpdatedMs, timestampMs)),
    extras: { sandbox_seq: prng.int(1, 1_000_000) },
    ...legacyFields(prng, object, timestampMs),
  };
}

/**
 * The data sources the generator draws from: which resource types each one produces and whether it
 * is a cloud/cellular source (those report connection events; mobile-SDK sources do not).
 */
export interface SourceInfo {
  type: string;
  resources: ResourceType[];
  /** Cloud and cellular sources report connection events; mobile-SDK sources do not. */
  reportsConnections: boolean;
  device: { name: string; type: string } | null;
}

export const SOURCES: SourceInfo[] = [
  {
    type: 'fitbit',
    resources: ['intraday', 'summary', 'sleep', 'workout'],
    reportsConnections: true,
    device: { name: 'Charge 6', type: 'tracker' },
  },
  {
    type: 'garmin_connect',
    resources: ['intraday', 'summary', 'workout', 'sleep'],
    reportsConnections: true,
    device: { name: 'Forerunner 265', type: 'watch' },
  },
  {
    type: 'withings',
    resources: ['measurement'],
    reportsConnections: true,
    device: { name: 'Body+', type: 'scale' },
  },
  {
    type: 'omron',
    resources: ['measurement'],
    reportsConnections: true,
    device: { name: 'BP7450', type: 'blood_pressure_monitor' },
  },
  { type: 'myfitnesspal', resources: ['nutrition'], reportsConnections: true, device: null },
  {
    type: 'dexcom',
    resources: ['cgm', 'intraday'],
    reportsConnections: true,
    device: { name: 'G7', type: 'cgm' },
  },
  {
    type: 'apple_health',
    resources: ['summary', 'workout', 'sleep', 'nutrition', 'measurement'],
    reportsConnections: false,
    device: null,
  },
  {
    type: 'cellular_bp',
    resources: ['measurement'],
    reportsConnections: true,
    device: { name: 'Cellular BP cuff', type: 'blood_pressure_monitor' },
  },
];

/** Records from before the rename day carry the old name (`nokia` became `withings`). */
export const RENAMED_SOURCES: Record<string, string> = { withings: 'nokia' };

export function sourceInfo(type: string): SourceInfo | undefined {
  return SOURCES.find((s) => s.type === type || RENAMED_SOURCES[s.type] === type);
}

/**
 * Zones a user may be given (control API `addUser`) but generated users never draw (adding them to
 * TIMEZONES would change every seeded data set): the extremes of UTC offsets.
 */
export const EXTREME_TIMEZONES: { timezone: string; country_code: string; offset: number }[] = [
  { timezone: 'Etc/GMT+12', country_code: 'UM', offset: -43_200 },
  { timezone: 'Pacific/Kiritimati', country_code: 'KI', offset: 50_400 },
];

export const TIMEZONES: { timezone: string; country_code: string; offset: number }[] = [
  { timezone: 'America/New_York', country_code: 'US', offset: -18_000 },
  { timezone: 'America/Chicago', country_code: 'US', offset: -21_600 },
  { timezone: 'America/Los_Angeles', country_code: 'US', offset: -28_800 },
  { timezone: 'Europe/London', country_code: 'GB', offset: 0 },
  { timezone: 'Europe/Berlin', country_code: 'DE', offset: 3_600 },
  { timezone: 'Asia/Kolkata', country_code: 'IN', offset: 19_800 },
  { timezone: 'Australia/Sydney', country_code: 'AU', offset: 36_000 },
];
