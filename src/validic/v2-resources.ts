/**
 * The v2 record resources. Config and CLI use the path names (`measurements, nutrition, intraday,
 * summaries, workouts, sleep, cgm`); records carry singular types (`measurement`, `summary`, `workout`;
 * the spec also states `measurements`), and stream/replay filters use the record types.
 */
import { UsageError } from '../errors/index.ts';

export const V2_RESOURCES = [
  'measurements',
  'nutrition',
  'intraday',
  'summaries',
  'workouts',
  'sleep',
  'cgm',
] as const;
export type V2Resource = (typeof V2_RESOURCES)[number];

const ALIASES: Record<string, V2Resource> = {
  measurement: 'measurements',
  measurements: 'measurements',
  nutrition: 'nutrition',
  intraday: 'intraday',
  summary: 'summaries',
  summaries: 'summaries',
  workout: 'workouts',
  workouts: 'workouts',
  sleep: 'sleep',
  cgm: 'cgm',
};

const RECORD_TYPES: Record<V2Resource, string> = {
  measurements: 'measurement',
  nutrition: 'nutrition',
  intraday: 'intraday',
  summaries: 'summary',
  workouts: 'workout',
  sleep: 'sleep',
  cgm: 'cgm',
};

/** Accepts path names and record types, case-insensitive; throws a UsageError naming the valid ones. */
export function toV2Resource(name: string): V2Resource {
  const resource = ALIASES[name.trim().toLowerCase()];
  if (!resource) {
    throw new UsageError(`unknown resource "${name}"`, `use one or more of: ${V2_RESOURCES.join(', ')}`);
  }
  return resource;
}

/** Path segment under `/users/{uid}/`. */
export function resourcePath(resource: V2Resource): string {
  return resource;
}

/** Record `type` of a resource (also the name stream `resource_filter` and replay `resources` use). */
export function recordTypeOf(resource: V2Resource): string {
  return RECORD_TYPES[resource];
}

/**
 * What a stream's `resource_filter` (and replay's `resources`) may name: the record types the platform
 * streams, plus `connection` for connection events (the stream delivers them too).
 */
export const STREAM_RECORD_TYPES = [...V2_RESOURCES.map((r) => RECORD_TYPES[r]), 'connection'] as const;

/**
 * A stream filter entry → the record type the platform expects (`measurements` → `measurement`,
 * `summaries` → `summary`, `connections` → `connection`), or null when the platform streams no such type.
 */
export function toStreamRecordType(name: string): string | null {
  const n = name.trim().toLowerCase();
  if (n === 'connection' || n === 'connections') return 'connection';
  const resource = ALIASES[n];
  return resource ? RECORD_TYPES[resource] : null;
}
