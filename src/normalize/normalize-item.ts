/**
 * Any raw item into rows: a stream frame routed by its shape, and users, connection events and legacy
 * records parsed (v2 records: normalize-record.ts).
 */

import { z } from 'zod';
import type { RawItem } from '../pipeline/batch.ts';
import { REDACTED, redactKnownSecrets, SECRET_PARAMS } from '../redact/redact-secrets.ts';
import { normalizeRecord } from './normalize-record.ts';
import type {
  ConnectionEventRow,
  LegacyRecordRow,
  Normalized,
  NormalizedRecord,
  QuarantineEntry,
  UserRow,
} from './normalized-types.ts';
import {
  describeIssues,
  describeJsonType,
  idSchema,
  isJsonObject,
  looseText,
  optionalText,
  optionalTimestamp,
  pathIdSchema,
  rawJsonText,
  readJsonNumber,
} from './parse-helpers.ts';

/**
 * One raw item of a batch (batch.ts `RawItem`) → a normalized row of the right kind, or a quarantine
 * entry. Pure; never throws for bad input.
 */
export type NormalizedItem =
  | { kind: 'record'; value: NormalizedRecord }
  | { kind: 'user'; value: UserRow }
  | { kind: 'connection_event'; value: ConnectionEventRow }
  | { kind: 'legacy'; value: LegacyRecordRow }
  | { kind: 'quarantine'; value: QuarantineEntry };

function unwrap<K extends NormalizedItem['kind'], T>(
  kind: K,
  result: { ok: true; value: T } | { ok: false; quarantine: QuarantineEntry },
): NormalizedItem {
  return result.ok
    ? ({ kind, value: result.value } as NormalizedItem)
    : { kind: 'quarantine', value: result.quarantine };
}

export function normalizeItem(item: RawItem): NormalizedItem {
  switch (item.kind) {
    case 'record':
      return unwrap('record', normalizeRecord(item.raw));
    case 'user':
      return unwrap('user', normalizeUser(item.raw));
    case 'connection_event':
      return unwrap('connection_event', normalizeConnectionEvent(item.raw));
    case 'legacy':
      return unwrap('legacy', normalizeLegacyRecord(item.object, item.raw));
    case 'frame':
      return routeFrame(item.raw) === 'connection_event'
        ? unwrap('connection_event', normalizeConnectionEvent(item.raw, 'frame'))
        : unwrap('record', normalizeRecord(item.raw, 'frame'));
    case 'unparseable':
      return { kind: 'quarantine', value: { kind: 'unparseable', reason: item.reason, raw: item.text } };
    default: {
      const unknownItem = item as { kind?: unknown };
      return {
        kind: 'quarantine',
        value: {
          kind: 'unknown',
          reason: `unknown item kind ${JSON.stringify(unknownItem.kind)}`,
          raw: JSON.stringify(item) ?? String(item),
        },
      };
    }
  }
}

/**
 * A stream/replay `data` frame carries one JSON payload: a record of any resource type or a connection
 * event. The frame does not say which, so decide by shape: a connection event has `action`
 * create/delete and none of a record's marks (`checksum`, `metrics`, `start_time`); anything else is
 * treated as a record (and an unusable one is quarantined by the record normalizer).
 */
export type FrameRoute = 'connection_event' | 'record';

const CONNECTION_ACTIONS = new Set(['create', 'delete']);
const RECORD_MARKS = ['checksum', 'metrics', 'start_time', 'end_time', 'log_id'];

export function routeFrame(payload: unknown): FrameRoute {
  if (!isJsonObject(payload)) return 'record';
  const action = payload.action;
  if (typeof action !== 'string' || !CONNECTION_ACTIONS.has(action)) return 'record';
  if (RECORD_MARKS.some((mark) => mark in payload)) return 'record';
  return 'connection_event';
}

/**
 * Users of the v2 users list: keyed by `uid` (the customer's id, the one used in paths; one that cannot
 * be a path segment, such as `..`, is quarantined). Per-user
 * secrets never reach the warehouse: `marketplace.token` and `mobile.token` let
 * anyone who holds them connect sources or the mobile SDK as that user, so every field named `token`
 * (or another secret name) is replaced by [REDACTED], and the token values are masked wherever else
 * they appear (the marketplace URL carries the marketplace token in its path). Secret-looking URL
 * parameters are redacted too. Rows and quarantine entries alike.
 */
export const userSchema = z
  .object({
    id: looseText,
    uid: pathIdSchema,
    status: optionalText,
    marketplace: z.object({ url: optionalText }).loose().nullish(),
    location: z.object({ timezone: optionalText, country_code: optionalText }).loose().nullish(),
    created_at: optionalTimestamp,
    updated_at: optionalTimestamp,
  })
  .loose();

/** Field names whose values are per-user secrets, wherever they sit in a user object. */
const SECRET_KEYS = new Set(SECRET_PARAMS);

/** The secret values a user object holds (`marketplace.token`, `mobile.token`, any `token` field). */
function secretValues(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) secretValues(v, found);
  else if (isJsonObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (SECRET_KEYS.has(k.toLowerCase()) && typeof v === 'string' && v.length >= 4) found.push(v);
      else secretValues(v, found);
    }
  }
  return found;
}

function maskText(text: string, secrets: readonly string[]): string {
  let out = redactKnownSecrets(text);
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

function redactTree(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return maskText(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactTree(v, secrets));
  if (isJsonObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        SECRET_KEYS.has(k.toLowerCase()) && v !== null ? REDACTED : redactTree(v, secrets),
      ]),
    );
  }
  return value;
}

export function normalizeUser(raw: unknown, kind = 'user'): Normalized<UserRow> {
  const original = rawJsonText(raw);
  const secrets = secretValues(raw);
  const reject = (reason: string): Normalized<UserRow> => ({
    ok: false,
    quarantine: {
      kind,
      reason,
      raw: original.ok ? JSON.stringify(redactTree(raw, secrets)) : maskText(original.text, secrets),
    },
  });
  if (!original.ok) return reject(original.reason);
  if (!isJsonObject(raw)) return reject(`user is ${describeJsonType(raw)}, not a JSON object`);
  const parsed = userSchema.safeParse(raw);
  if (!parsed.success) return reject(`invalid user: ${describeIssues(parsed.error)}`);
  const u = parsed.data;
  const marketplaceUrl = u.marketplace?.url ?? null;
  return {
    ok: true,
    value: {
      uid: u.uid,
      userId: u.id,
      timezone: u.location?.timezone ?? null,
      countryCode: u.location?.country_code ?? null,
      status: u.status,
      marketplaceUrl: marketplaceUrl === null ? null : maskText(marketplaceUrl, secrets),
      createdAt: u.created_at,
      updatedAt: u.updated_at,
      raw: JSON.stringify(redactTree(raw, secrets)),
    },
  };
}

/**
 * Connection events (a user connected or disconnected a source): id + action required; profile and
 * credentials (create only) and deleted_at/deleted_reason (delete only) kept when present.
 */
export const connectionEventSchema = z
  .object({
    id: idSchema,
    action: z.string().min(1, 'must not be empty'),
    user: z.object({ uid: looseText, user_id: looseText }).loose().nullish(),
    source: z.object({ type: optionalText }).loose().nullish(),
    created_at: optionalTimestamp,
    event_time: optionalTimestamp,
    deleted_at: optionalTimestamp,
    deleted_reason: optionalText,
    profile: z.unknown().optional(),
    credentials: z.unknown().optional(),
  })
  .loose();

const jsonOrNull = (value: unknown): string | null =>
  value === undefined || value === null ? null : JSON.stringify(value);

export function normalizeConnectionEvent(
  raw: unknown,
  kind = 'connection_event',
): Normalized<ConnectionEventRow> {
  const rawText = rawJsonText(raw);
  const reject = (reason: string): Normalized<ConnectionEventRow> => ({
    ok: false,
    quarantine: { kind, reason, raw: rawText.text },
  });
  if (!rawText.ok) return reject(rawText.reason);
  if (!isJsonObject(raw)) return reject(`connection event is ${describeJsonType(raw)}, not a JSON object`);
  const parsed = connectionEventSchema.safeParse(raw);
  if (!parsed.success) return reject(`invalid connection event: ${describeIssues(parsed.error)}`);
  const e = parsed.data;
  return {
    ok: true,
    value: {
      id: e.id,
      action: e.action,
      uid: e.user?.uid ?? null,
      userId: e.user?.user_id ?? null,
      sourceType: e.source?.type ?? null,
      createdAt: e.created_at,
      eventTime: e.event_time,
      deletedAt: e.deleted_at,
      deletedReason: e.deleted_reason,
      profile: jsonOrNull(e.profile),
      credentials: jsonOrNull(e.credentials),
      raw: rawText.text,
    },
  };
}

/**
 * Legacy (v1) records of any object (fitness, routine, nutrition, sleep, weight, diabetes, biometrics,
 * tobacco_cessation, or one not known yet): `_id` required; timestamps in either accepted form
 * (`…Z` or `….ms±hh:mm`) become UTC; object-specific fields stay in raw (typed by the legacy_* views).
 */
export const legacyRecordSchema = z
  .object({
    _id: idSchema,
    user_id: looseText,
    user: z.object({ _id: looseText }).loose().nullish(),
    timestamp: optionalTimestamp,
    utc_offset: looseText,
    last_updated: optionalTimestamp,
    source: optionalText,
    source_name: optionalText,
    activity_id: looseText,
    validated: z
      .union([z.boolean(), z.enum(['true', 'false'])])
      .nullish()
      .transform((v) => (v === null || v === undefined ? null : v === true || v === 'true')),
  })
  .loose();

/**
 * The number fields of the legacy objects the v1 spec lists, typed by the `legacy_<object>` views
 * (migrations 0001 and 0029, `validic.json_number`, the same reading as readJsonNumber). A value there
 * that is not a number is named on the record (the view shows null for it; raw keeps it).
 */
export const LEGACY_NUMBER_FIELDS: Readonly<Record<string, readonly string[]>> = {
  fitness: ['distance', 'duration', 'calories'],
  routine: ['steps', 'distance', 'floors', 'elevation', 'calories_burned'],
  nutrition: ['calories', 'carbohydrates', 'fat', 'fiber', 'protein', 'sodium', 'water'],
};

export function normalizeLegacyRecord(object: string, raw: unknown): Normalized<LegacyRecordRow> {
  const kind = `legacy:${object}`;
  const rawText = rawJsonText(raw);
  const reject = (reason: string): Normalized<LegacyRecordRow> => ({
    ok: false,
    quarantine: { kind, reason, raw: rawText.text },
  });
  if (!rawText.ok) return reject(rawText.reason);
  if (!/^[a-z][a-z0-9_]*$/.test(object))
    return reject(`invalid legacy object name ${JSON.stringify(object)}`);
  if (!isJsonObject(raw))
    return reject(`legacy ${object} record is ${describeJsonType(raw)}, not a JSON object`);
  const parsed = legacyRecordSchema.safeParse(raw);
  if (!parsed.success) return reject(`invalid legacy ${object} record: ${describeIssues(parsed.error)}`);
  const r = parsed.data;
  const badValues: string[] = [];
  for (const name of LEGACY_NUMBER_FIELDS[object] ?? []) {
    const value = raw[name];
    if (value === undefined || value === null) continue;
    const read = readJsonNumber(value);
    if (!read.ok) badValues.push(`${name}: ${read.reason}`);
  }
  return {
    ok: true,
    value: {
      object,
      id: r._id,
      userId: r.user_id ?? r.user?._id ?? null,
      timestamp: r.timestamp,
      utcOffset: r.utc_offset,
      lastUpdated: r.last_updated,
      source: r.source,
      sourceName: r.source_name,
      activityId: r.activity_id,
      validated: r.validated,
      raw: rawText.text,
      badValues,
    },
  };
}
