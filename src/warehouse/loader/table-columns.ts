/**
 * One column descriptor per table the loader writes: each column is spelled ONCE, with its PostgreSQL
 * type and the field of the normalized row it takes. From it come the staging table (staging-tables.ts),
 * the COPY column list and row values, the INSERT column list and the upsert's SET list (the helpers
 * below), and the benchmark's COPY baseline. `validic.records` has its own in record-row.ts (RECORDS),
 * whose values are computed per row at once (the series columns share one pass over the points).
 * org_id and arrived_via come from the batch, not from the row, so no descriptor lists them.
 */
import { type RawBuilder, sql } from 'kysely';
import type { ConnectionEventRow, LegacyRecordRow, UserRow } from '../../normalize/normalized-types.ts';

export interface TableColumn {
  name: string;
  /** PostgreSQL type of the column (also of its staging column). */
  type: string;
}

export interface TableColumns<Row> {
  /** The session temp table the loader COPYs rows into. */
  staging: string;
  /** The columns of the key after org_id (never in a SET list). */
  key: readonly string[];
  columns: readonly TableColumn[];
  /** The values of `columns` for one row, in that order. */
  values(row: Row): unknown[];
}

type Field<Row> = readonly [name: string, type: string, value: (row: Row) => unknown];

/** A descriptor from one entry per column: its name, its type and where its value comes from. */
function fromFields<Row>(
  staging: string,
  key: readonly string[],
  fields: readonly Field<Row>[],
): TableColumns<Row> {
  const getters = fields.map(([, , value]) => value);
  return {
    staging,
    key,
    columns: fields.map(([name, type]) => ({ name, type })),
    values: (row) => getters.map((get) => get(row)),
  };
}

export const USERS = fromFields<UserRow>(
  'validic_stage_users',
  ['uid'],
  [
    ['uid', 'text', (u) => u.uid],
    ['user_id', 'text', (u) => u.userId],
    ['timezone', 'text', (u) => u.timezone],
    ['country_code', 'text', (u) => u.countryCode],
    ['status', 'text', (u) => u.status],
    ['marketplace_url', 'text', (u) => u.marketplaceUrl],
    ['created_at', 'timestamptz', (u) => u.createdAt],
    ['updated_at', 'timestamptz', (u) => u.updatedAt],
    ['raw', 'jsonb', (u) => u.raw],
  ],
);

export const CONNECTION_EVENTS = fromFields<ConnectionEventRow>(
  'validic_stage_connection_events',
  ['id'],
  [
    ['id', 'text', (e) => e.id],
    ['action', 'text', (e) => e.action],
    ['uid', 'text', (e) => e.uid],
    ['user_id', 'text', (e) => e.userId],
    ['source_type', 'text', (e) => e.sourceType],
    ['created_at', 'timestamptz', (e) => e.createdAt],
    ['event_time', 'timestamptz', (e) => e.eventTime],
    ['deleted_at', 'timestamptz', (e) => e.deletedAt],
    ['deleted_reason', 'text', (e) => e.deletedReason],
    ['profile', 'jsonb', (e) => e.profile],
    ['credentials', 'jsonb', (e) => e.credentials],
    ['raw', 'jsonb', (e) => e.raw],
  ],
);

export const LEGACY_RECORDS = fromFields<LegacyRecordRow>(
  'validic_stage_legacy',
  ['object', 'id'],
  [
    ['object', 'text', (r) => r.object],
    ['id', 'text', (r) => r.id],
    ['user_id', 'text', (r) => r.userId],
    ['timestamp', 'timestamptz', (r) => r.timestamp],
    ['utc_offset', 'text', (r) => r.utcOffset],
    ['last_updated', 'timestamptz', (r) => r.lastUpdated],
    ['source', 'text', (r) => r.source],
    ['source_name', 'text', (r) => r.sourceName],
    ['activity_id', 'text', (r) => r.activityId],
    ['validated', 'boolean', (r) => r.validated],
    ['raw', 'jsonb', (r) => r.raw],
  ],
);

type AnyTable = Pick<TableColumns<never>, 'columns' | 'key'>;

/** The columns not in the key: what an upsert sets and a change is detected on. */
const nonKey = (t: AnyTable) => t.columns.filter((c) => !t.key.includes(c.name));

/** `a, b, c`: the INSERT (and COPY) column list. */
export const columnList = (t: AnyTable): RawBuilder<unknown> =>
  sql.join(t.columns.map((c) => sql.ref(c.name)));

/** `s.a, s.b, s.c`: every column read from `alias` (the staging table), in column order. */
export const columnsOf = (t: AnyTable, alias: string): RawBuilder<unknown> =>
  sql.join(t.columns.map((c) => sql`${sql.raw(alias)}.${sql.ref(c.name)}`));

/** `(s.b, s.c)`: the columns outside the key read from `alias`, as one row value (change detection). */
export const valueRow = (t: AnyTable, alias: string): RawBuilder<unknown> =>
  sql`(${sql.join(nonKey(t).map((c) => sql`${sql.raw(alias)}.${sql.ref(c.name)}`))})`;

/** `b = excluded.b, c = excluded.c`: the SET list of an upsert or update from `source`, keys left out. */
export const setList = (t: AnyTable, source: string): RawBuilder<unknown> =>
  sql.join(nonKey(t).map((c) => sql`${sql.ref(c.name)} = ${sql.raw(source)}.${sql.ref(c.name)}`));
