/** Shapes the sandbox serves. Field names follow the spec's field tables exactly. */

export const RESOURCE_TYPES = [
  'measurement',
  'nutrition',
  'intraday',
  'summary',
  'workout',
  'sleep',
  'cgm',
] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** URL segment of each resource's retrieval endpoint: `/users/{uid}/<segment>`. */
export const RESOURCE_PATHS: Record<string, ResourceType> = {
  measurements: 'measurement',
  nutrition: 'nutrition',
  intraday: 'intraday',
  summaries: 'summary',
  workouts: 'workout',
  sleep: 'sleep',
  cgm: 'cgm',
};

/** Accepts singular, plural and path forms of a resource name (stream filters, replay `resources`). */
export function resourceFromName(name: string): ResourceType | 'connection' | null {
  const n = name.trim().toLowerCase();
  if (n === 'connection' || n === 'connections') return 'connection';
  if ((RESOURCE_TYPES as readonly string[]).includes(n)) return n as ResourceType;
  if (n in RESOURCE_PATHS) return RESOURCE_PATHS[n] as ResourceType;
  return null;
}

export interface Metric {
  type: string;
  origin: 'device' | 'manual' | 'unknown';
  unit: string;
  value: number;
}

export interface SeriesMetric {
  type: string;
  origin: 'device' | 'manual' | 'unknown';
  unit: string;
  data_points: { time: string; value: number }[];
}

export interface RecordUserRef {
  uid: string;
  user_id: string;
  organization_id: string;
}

export interface V2Record {
  version: string;
  id: string;
  checksum: string;
  type: ResourceType;
  start_time: string;
  end_time: string;
  utc_offset: number;
  offset_origin: 'source' | 'profile' | 'user_defined';
  user: RecordUserRef;
  log_id: string;
  source: { type: string; device: { name: string; type: string } | null };
  metrics: (Metric | SeriesMetric)[];
  created_at: string;
  deleted_at: string | null;
  tags: { name: string; value: string }[];
  user_notes: unknown[];
  [extra: string]: unknown;
}

export interface User {
  id: string;
  uid: string;
  marketplace: { token: string; url: string };
  mobile: { token: string };
  location: { timezone: string; country_code: string };
  status: string;
  sources: { type: string; connected_at: string }[];
  created_at: string;
  updated_at: string;
}

export interface ConnectionEvent {
  action: 'create' | 'delete';
  id: string;
  profile?: Record<string, unknown>;
  credentials?: Record<string, unknown>;
  user: RecordUserRef;
  source: { type: string };
  created_at: string;
  event_time: string;
  deleted_at?: string;
  deleted_reason?: string;
}

export const LEGACY_OBJECTS = [
  'fitness',
  'routine',
  'nutrition',
  'sleep',
  'weight',
  'diabetes',
  'biometrics',
  'tobacco_cessation',
] as const;
export type LegacyObject = (typeof LEGACY_OBJECTS)[number];

export interface LegacyRecord {
  _id: string;
  user_id: string;
  timestamp: string;
  utc_offset: string;
  activity_id: string;
  source: string;
  source_name: string;
  validated: boolean;
  last_updated: string;
  extras?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface LegacyUser {
  _id: string;
  uid: string;
  access_token: string;
  created_at: string;
}
