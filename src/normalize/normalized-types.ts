/**
 * What normalization produces: warehouse rows without `org_id` (the loader adds it from the batch),
 * or a quarantine entry with the raw text and a precise reason. Timestamps are canonical UTC ISO
 * strings; `raw` fields are JSON text ready for a jsonb column.
 */
import type { JsonNumber } from './parse-helpers.ts';

export interface QuarantineEntry {
  /** record, user, connection_event, frame, legacy:<object>, unparseable */
  kind: string;
  reason: string;
  raw: string;
}

export type Normalized<T> = { ok: true; value: T } | { ok: false; quarantine: QuarantineEntry };

export interface MetricRow {
  metricIndex: number;
  type: string;
  origin: string | null;
  unit: string | null;
  /** Exactly as sent (parse-helpers.ts `JsonNumber`): stored in jsonb without rounding. */
  value: JsonNumber | null;
}

export interface RecordRow {
  id: string;
  type: string;
  version: string | null;
  checksum: string;
  uid: string | null;
  userId: string | null;
  sourceType: string | null;
  /** JSON text or null. */
  sourceDevice: string | null;
  logId: string | null;
  startTime: string | null;
  endTime: string | null;
  utcOffset: number | null;
  offsetOrigin: string | null;
  createdAt: string;
  deletedAt: string | null;
  /** JSON text or null. */
  tags: string | null;
  /** JSON text or null. */
  userNotes: string | null;
  name: string | null;
  category: string | null;
  granularityInterval: number | null;
  granularityUnit: string | null;
  raw: string;
}

export interface NutritionSegmentRow {
  segmentIndex: number;
  name: string | null;
}

export interface NutritionSegmentMetricRow extends MetricRow {
  segmentIndex: number;
}

export interface NutritionFoodRow {
  segmentIndex: number;
  foodIndex: number;
  name: string | null;
  brand: string | null;
  servingAmount: JsonNumber | null;
  servingUnitName: string | null;
}

export interface NutritionFoodMetricRow extends MetricRow {
  segmentIndex: number;
  foodIndex: number;
}

export interface IntradaySeriesRow {
  metricIndex: number;
  metricType: string;
  unit: string | null;
  origin: string | null;
  /** UTC ISO strings, parallel to `values`. */
  times: string[];
  values: number[];
  /** Points of the metric left out (a value that is not a number, a bad time, not an object). */
  badPoints: number;
}

/** A v2 record of any type with its child rows. */
export interface NormalizedRecord {
  record: RecordRow;
  metrics: MetricRow[];
  segments: NutritionSegmentRow[];
  segmentMetrics: NutritionSegmentMetricRow[];
  food: NutritionFoodRow[];
  foodMetrics: NutritionFoodMetricRow[];
  intraday: IntradaySeriesRow[];
  /**
   * Series points left out, each named by its path (`metrics[0].data_points[3].value: not a number:
   * null`). The record still loads; the loader files one informational quarantine entry (kind
   * `bad_points`) with the whole raw.
   */
  badPoints: string[];
  /**
   * Metrics left out and fields of nested parts left null because they could not be read, each named by
   * its path (`metrics[1].value: not a number: "n/a"`, `segments[0].food[2].serving.amount: …`). The
   * record still loads; the loader files one informational quarantine entry (kind `bad_values`).
   */
  badValues: string[];
}

export interface UserRow {
  uid: string;
  userId: string | null;
  timezone: string | null;
  countryCode: string | null;
  status: string | null;
  marketplaceUrl: string | null;
  createdAt: string | null;
  updatedAt: string | null;
  raw: string;
}

export interface ConnectionEventRow {
  id: string;
  action: string;
  uid: string | null;
  userId: string | null;
  sourceType: string | null;
  createdAt: string | null;
  eventTime: string | null;
  deletedAt: string | null;
  deletedReason: string | null;
  profile: string | null;
  credentials: string | null;
  raw: string;
}

export interface LegacyRecordRow {
  object: string;
  id: string;
  userId: string | null;
  timestamp: string | null;
  utcOffset: string | null;
  lastUpdated: string | null;
  source: string | null;
  sourceName: string | null;
  activityId: string | null;
  validated: boolean | null;
  raw: string;
  /** Number fields the legacy view types that hold no number (`duration: not a number: "0x1A"`). */
  badValues: string[];
}

export function emptyChildren(): Omit<NormalizedRecord, 'record'> {
  return {
    metrics: [],
    segments: [],
    segmentMetrics: [],
    food: [],
    foodMetrics: [],
    intraday: [],
    badPoints: [],
    badValues: [],
  };
}
