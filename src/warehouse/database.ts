/**
 * The kysely `Database` interface, hand-written to match migrations/ (the only way the schema changes).
 * Reading: timestamptz columns come back as `Date` and `date` columns as 'YYYY-MM-DD' strings (see the
 * type parsers in open-warehouse.ts); writing accepts a `Date` or an ISO string.
 */
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type TimestampDefault = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = ColumnType<unknown, string, string>;
type ArrivedVia = 'poll' | 'stream' | 'replay' | 'reconcile' | 'audit' | 'legacy' | 'push';

export interface UsersTable {
  org_id: string;
  uid: string;
  user_id: string | null;
  timezone: string | null;
  country_code: string | null;
  status: string | null;
  marketplace_url: string | null;
  created_at: Timestamp | null;
  updated_at: Timestamp | null;
  raw: Json;
  ingested_at: TimestampDefault;
  synced_at: TimestampDefault;
  /** Migration 0007: set when the user is gone from the platform (no longer polled). */
  removed_at: Timestamp | null;
}

export interface RecordsTable {
  org_id: string;
  id: string;
  type: string;
  version: string | null;
  checksum: string;
  uid: string | null;
  user_id: string | null;
  source_type: string | null;
  source_device: Json | null;
  log_id: string | null;
  start_time: Timestamp | null;
  end_time: Timestamp | null;
  utc_offset: number | null;
  offset_origin: string | null;
  created_at: Timestamp;
  deleted_at: Timestamp | null;
  tags: Json | null;
  user_notes: Json | null;
  name: string | null;
  category: string | null;
  granularity_interval: number | null;
  granularity_unit: string | null;
  /** Normalized nested parts (migration 0010); read them as rows through the views below. */
  metrics: Json | null;
  segments: Json | null;
  series: Json | null;
  series_time_deltas: string[] | null;
  series_values: number[] | null;
  /** Null once emptied by the raw retention (raw_emptied_at). */
  raw: Json | null;
  raw_emptied_at: Timestamp | null;
  arrived_via: ArrivedVia;
  ingested_at: TimestampDefault;
  updated_at: TimestampDefault;
}

interface MetricColumns {
  type: string;
  origin: string | null;
  unit: string | null;
  value: number | null;
}

/** Views since migration 0010 (over the normalized columns of records): read-only. */
export interface RecordMetricsTable extends MetricColumns {
  org_id: string;
  record_id: string;
  metric_index: number;
}

export interface NutritionSegmentsTable {
  org_id: string;
  record_id: string;
  segment_index: number;
  name: string | null;
}

export interface NutritionSegmentMetricsTable extends MetricColumns {
  org_id: string;
  record_id: string;
  segment_index: number;
  metric_index: number;
}

export interface NutritionFoodTable {
  org_id: string;
  record_id: string;
  segment_index: number;
  food_index: number;
  name: string | null;
  brand: string | null;
  serving_amount: number | null;
  serving_unit_name: string | null;
}

export interface NutritionFoodMetricsTable extends MetricColumns {
  org_id: string;
  record_id: string;
  segment_index: number;
  food_index: number;
  metric_index: number;
}

export interface IntradaySeriesTable {
  org_id: string;
  record_id: string;
  metric_index: number;
  metric_type: string;
  unit: string | null;
  origin: string | null;
  time: ColumnType<Date[], string[] | Date[], string[] | Date[]>;
  value: number[];
  /** Points of the series left out as unreadable (0008). */
  bad_points: ColumnType<number, number | undefined, number>;
}

export interface IntradayPointsView {
  org_id: string;
  record_id: string;
  metric_type: string;
  unit: string | null;
  origin: string | null;
  time: Date;
  value: number;
}

export interface ConnectionEventsTable {
  org_id: string;
  id: string;
  action: string;
  uid: string | null;
  user_id: string | null;
  source_type: string | null;
  created_at: Timestamp | null;
  event_time: Timestamp | null;
  deleted_at: Timestamp | null;
  deleted_reason: string | null;
  profile: Json | null;
  credentials: Json | null;
  raw: Json;
  arrived_via: ArrivedVia;
  ingested_at: TimestampDefault;
}

export interface LegacyRecordsTable {
  org_id: string;
  object: string;
  id: string;
  user_id: string | null;
  timestamp: Timestamp | null;
  utc_offset: string | null;
  last_updated: Timestamp | null;
  source: string | null;
  source_name: string | null;
  activity_id: string | null;
  validated: boolean | null;
  raw: Json;
  arrived_via: ArrivedVia;
  ingested_at: TimestampDefault;
  updated_at: TimestampDefault;
  /** Migration 0007: set when the record answered 404 on the platform. */
  deleted_at: Timestamp | null;
}

/** Columns every legacy_<object> view has; object-specific typed columns come on top. */
export interface LegacyViewCommon {
  org_id: string;
  id: string;
  user_id: string | null;
  timestamp: Date | null;
  utc_offset: string | null;
  last_updated: Date | null;
  source: string | null;
  source_name: string | null;
  activity_id: string | null;
  validated: boolean | null;
  raw: unknown;
  ingested_at: Date;
}

export interface LegacyFitnessView extends LegacyViewCommon {
  activity_type: string | null;
  intensity: string | null;
  start_time: string | null;
  distance: number | null;
  duration: number | null;
  calories: number | null;
  activity_category: string | null;
  extras: unknown;
}

export interface LegacyRoutineView extends LegacyViewCommon {
  steps: number | null;
  distance: number | null;
  floors: number | null;
  elevation: number | null;
  calories_burned: number | null;
  extras: unknown;
}

export interface LegacyNutritionView extends LegacyViewCommon {
  calories: number | null;
  carbohydrates: number | null;
  fat: number | null;
  fiber: number | null;
  protein: number | null;
  sodium: number | null;
  water: number | null;
  meal: string | null;
}

export interface RecordVersionsTable {
  org_id: string;
  record_id: string;
  checksum: string;
  type: string;
  created_at: Timestamp;
  deleted_at: Timestamp | null;
  /** Null when the replaced version's raw had been emptied by the retention. */
  raw: Json | null;
  arrived_via: ArrivedVia;
  archived_at: TimestampDefault;
  /** The version's start_time: the month partition it lives in. */
  start_time: Timestamp | null;
}

export interface CheckpointsTable {
  org_id: string;
  key: string;
  value: Json;
  updated_at: TimestampDefault;
}

export interface RunsTable {
  id: string;
  org_id: string;
  command: string;
  args: Json;
  status: 'running' | 'done' | 'failed' | 'interrupted';
  started_at: TimestampDefault;
  finished_at: Timestamp | null;
  summary: Json | null;
  /** Migration 0042: who runs it (run-heartbeats.ts), and its last heartbeat. */
  holder: string | null;
  heartbeat_at: Timestamp | null;
}

/** validic_sync.backfill_progress (migration 0041): a run's ledger in sums, per writing backend's shard. */
export interface BackfillProgressTable {
  run_id: string;
  shard: number;
  windows: number;
  done: number;
  records: number;
  requests: number;
}

export interface BackfillWindowsTable {
  run_id: string;
  window_key: string;
  org_id: string;
  uid: string | null;
  resource: string;
  /** 'YYYY-MM-DD' */
  start_date: string;
  /** 'YYYY-MM-DD' */
  end_date: string;
  status: ColumnType<'pending' | 'done', 'pending' | 'done' | undefined, 'pending' | 'done'>;
  records: ColumnType<number, number | undefined, number>;
  requests: ColumnType<number, number | undefined, number>;
  completed_at: Timestamp | null;
}

export interface QuarantineTable {
  id: Generated<number>;
  org_id: string;
  arrived_via: ArrivedVia;
  kind: string;
  reason: string;
  raw: string;
  raw_sha256: string;
  first_seen_at: TimestampDefault;
  last_seen_at: TimestampDefault;
  seen_count: ColumnType<number, number | undefined, number>;
}

export interface RecentPollsTable {
  org_id: string;
  uid: string;
  enqueued_at: Timestamp | null;
  polled_at: Timestamp | null;
}

/** validic_sync.stream_gaps (migration 0016): spans in which the stream may have lost events. */
export interface StreamGapsTable {
  id: Generated<number>;
  org_id: string;
  stream_name: string;
  slot: number;
  gap_from: Timestamp;
  gap_to: Timestamp;
  reason: string;
  recorded_at: TimestampDefault;
  handled_by: string;
  covered_at: Timestamp | null;
  covered_by_pass: number | null;
}

/** validic_sync.reconcile_passes (migrations 0016, 0023): deliveries, passes of the reconciliation stream or replays. */
export interface ReconcilePassesTable {
  id: Generated<number>;
  org_id: string;
  stream_name: string;
  stream_id: string;
  trigger: string;
  started_at: Timestamp;
  ended_at: Timestamp | null;
  outcome: string;
  chain_from: Timestamp;
  reach_from: Timestamp;
  reach_to: Timestamp | null;
  frames: Generated<number>;
  missed: Generated<number>;
  inserted: Generated<number>;
  updated: Generated<number>;
  unchanged: Generated<number>;
  stale: Generated<number>;
  quarantined: Generated<number>;
  source: Generated<string>;
  replay_date: string | null;
  cover_from: Timestamp | null;
  committed_to: Timestamp | null;
  read_to: Timestamp | null;
  next_cover_from: Timestamp | null;
  host: string | null;
  pid: number | null;
  heartbeat_at: Timestamp | null;
}

/** validic_sync.audits (migration 0018): runs of the completeness audit. */
export interface AuditsTable {
  id: Generated<number>;
  org_id: string;
  kind: string;
  range_from: string;
  range_to: string;
  sample: number;
  seed: string;
  population: number;
  /** Migration 0040: a tick's stratum populations (null for a command run). */
  population_recent: number | null;
  population_history: number | null;
  planned: number;
  repair: boolean;
  started_at: Generated<Timestamp>;
  ended_at: Timestamp | null;
  cells_complete: Generated<number>;
  cells_drift: Generated<number>;
  cells_failed: Generated<number>;
  cells_unsynced: Generated<number>;
  /** Migration 0042: who runs it, its last heartbeat, whether it ended before its last cell. */
  holder: string | null;
  heartbeat_at: Timestamp | null;
  interrupted: Generated<boolean>;
  records_equal: Generated<number>;
  records_missing: Generated<number>;
  records_stale: Generated<number>;
  records_extra: Generated<number>;
  records_repaired: Generated<number>;
}

/** validic_sync.audit_cells (migration 0018): each cell the completeness audit compared. */
export interface AuditCellsTable {
  audit_id: number;
  org_id: string;
  uid: string;
  resource: string;
  start_date: string;
  end_date: string;
  stratum: string;
  outcome: string;
  platform_records: Generated<number>;
  equal: Generated<number>;
  missing: Generated<number>;
  stale: Generated<number>;
  extra: Generated<number>;
  repaired: Generated<number>;
  drift_ids: string[] | null;
  error: string | null;
  audited_at: Generated<Timestamp>;
}

/** validic_sync.platform_clock (migration 0035): each worker's measure of its clock against the platform's. */
export interface PlatformClockTable {
  reporter: string;
  offset_ms: number;
  uncertainty_ms: number;
  observed_at: Date;
  written_at: Generated<Date>;
}

/** validic_sync.users_listings (migration 0019): uids a running users listing has shown. */
export interface UsersListingsTable {
  org_id: string;
  listing_id: string;
  uid: string;
  listed_at: Generated<Timestamp>;
  first_listed: Generated<boolean>;
}

/** validic_sync.first_syncs (migration 0021): the first sync of each primary stream. */
export interface FirstSyncsTable {
  org_id: string;
  stream_name: string;
  started_at: TimestampDefault;
  /** 'YYYY-MM-DD'; null: completed before first syncs were tracked. */
  from_date: string | null;
  to_date: string | null;
  next_uid: string | null;
  completed_at: Timestamp | null;
  users_covered: number | null;
}

/** validic_sync.first_sync_polls (migration 0021): the windows of each user a first sync polled. */
export interface FirstSyncPollsTable {
  org_id: string;
  stream_name: string;
  uid: string;
  start_date: string;
  end_date: string;
  polled_at: TimestampDefault;
}

/** validic_sync.legacy_delete_checks (migration 0014): legacy records a window no longer listed. */
export interface LegacyDeleteChecksTable {
  org_id: string;
  object: string;
  id: string;
  user_id: string;
  absent_since: TimestampDefault;
  asked_at: Timestamp | null;
  outcome: 'deleted' | 'found' | null;
}

export interface Database {
  'validic.users': UsersTable;
  'validic.records': RecordsTable;
  'validic.record_metrics': RecordMetricsTable;
  'validic.nutrition_segments': NutritionSegmentsTable;
  'validic.nutrition_segment_metrics': NutritionSegmentMetricsTable;
  'validic.nutrition_food': NutritionFoodTable;
  'validic.nutrition_food_metrics': NutritionFoodMetricsTable;
  'validic.intraday_series': IntradaySeriesTable;
  'validic.intraday_points': IntradayPointsView;
  'validic.connection_events': ConnectionEventsTable;
  'validic.legacy_records': LegacyRecordsTable;
  'validic.legacy_fitness': LegacyFitnessView;
  'validic.legacy_routine': LegacyRoutineView;
  'validic.legacy_nutrition': LegacyNutritionView;
  'validic.legacy_sleep': LegacyViewCommon;
  'validic.legacy_weight': LegacyViewCommon;
  'validic.legacy_diabetes': LegacyViewCommon;
  'validic.legacy_biometrics': LegacyViewCommon;
  'validic.legacy_tobacco_cessation': LegacyViewCommon;
  'validic.record_versions': RecordVersionsTable;
  'validic_sync.checkpoints': CheckpointsTable;
  'validic_sync.runs': RunsTable;
  'validic_sync.backfill_progress': BackfillProgressTable;
  'validic_sync.backfill_windows': BackfillWindowsTable;
  'validic_sync.quarantine': QuarantineTable;
  'validic_sync.recent_polls': RecentPollsTable;
  'validic_sync.stream_gaps': StreamGapsTable;
  'validic_sync.reconcile_passes': ReconcilePassesTable;
  'validic_sync.legacy_delete_checks': LegacyDeleteChecksTable;
  'validic_sync.audits': AuditsTable;
  'validic_sync.audit_cells': AuditCellsTable;
  'validic_sync.users_listings': UsersListingsTable;
  'validic_sync.first_syncs': FirstSyncsTable;
  'validic_sync.first_sync_polls': FirstSyncPollsTable;
  'validic_sync.platform_clock': PlatformClockTable;
}
