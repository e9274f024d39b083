/**
 * Session temp tables the loader COPYs a batch into before set-based INSERT … SELECT into `validic`.
 *
 * Only rows that will be written are staged (the loader first probes keys), so COPY volume follows
 * the changes, not the deliveries. They are `ON COMMIT DELETE ROWS` and created `IF NOT EXISTS` rather than `ON COMMIT DROP`: the
 * stream loads many tiny batches, and creating and dropping the tables per batch would churn the
 * system catalogs; a pooled connection keeps its empty tables for the next batch instead.
 */
import { sql } from 'kysely';
import type { CopyRows, WarehouseTransaction } from './open-warehouse.ts';
import { RECORD_COLUMNS } from './record-row.ts';

export interface StagingTable {
  name: string;
  columns: readonly (readonly [name: string, type: string])[];
}

const table = (name: string, columns: StagingTable['columns']): StagingTable => ({ name, columns });

export const STAGE = {
  records: table('validic_stage_records', [
    ...RECORD_COLUMNS.map(({ name, type }) => [name, type] as const),
    /** true: becomes the current version in records; false: goes to record_versions. */
    ['apply', 'boolean'],
  ]),
  users: table('validic_stage_users', [
    ['uid', 'text'],
    ['user_id', 'text'],
    ['timezone', 'text'],
    ['country_code', 'text'],
    ['status', 'text'],
    ['marketplace_url', 'text'],
    ['created_at', 'timestamptz'],
    ['updated_at', 'timestamptz'],
    ['raw', 'jsonb'],
  ]),
  events: table('validic_stage_connection_events', [
    ['id', 'text'],
    ['action', 'text'],
    ['uid', 'text'],
    ['user_id', 'text'],
    ['source_type', 'text'],
    ['created_at', 'timestamptz'],
    ['event_time', 'timestamptz'],
    ['deleted_at', 'timestamptz'],
    ['deleted_reason', 'text'],
    ['profile', 'jsonb'],
    ['credentials', 'jsonb'],
    ['raw', 'jsonb'],
  ]),
  legacy: table('validic_stage_legacy', [
    ['object', 'text'],
    ['id', 'text'],
    ['user_id', 'text'],
    ['timestamp', 'timestamptz'],
    ['utc_offset', 'text'],
    ['last_updated', 'timestamptz'],
    ['source', 'text'],
    ['source_name', 'text'],
    ['activity_id', 'text'],
    ['validated', 'boolean'],
    ['raw', 'jsonb'],
  ]),
} as const satisfies Record<string, StagingTable>;

export async function ensureStagingTable(tx: WarehouseTransaction, stage: StagingTable): Promise<void> {
  const columns = stage.columns.map(([name, type]) => `"${name}" ${type}`).join(', ');
  await sql
    .raw(`create temp table if not exists ${stage.name} (${columns}) on commit delete rows`)
    .execute(tx.db);
}

/** Creates the table if needed and COPYs `rows` (in column order) into it. */
export async function stageRows(
  tx: WarehouseTransaction & { copyRows: CopyRows },
  stage: StagingTable,
  rows: readonly (readonly unknown[])[],
): Promise<void> {
  await ensureStagingTable(tx, stage);
  if (rows.length === 0) return;
  await tx.copyRows(
    stage.name,
    stage.columns.map(([name]) => name),
    rows,
  );
}
