/**
 * Session temp tables the loader COPYs a batch into before set-based INSERT … SELECT into `validic`.
 *
 * Only rows that will be written are staged (the loader first probes keys), so COPY volume follows
 * the changes, not the deliveries. They are `ON COMMIT DELETE ROWS` and created `IF NOT EXISTS` rather than `ON COMMIT DROP`: the
 * stream loads many tiny batches, and creating and dropping the tables per batch would churn the
 * system catalogs; a pooled connection keeps its empty tables for the next batch instead.
 */
import { sql } from 'kysely';
import type { CopyRows, WarehouseTransaction } from '../open-warehouse.ts';
import { RECORDS } from './record-row.ts';
import { CONNECTION_EVENTS, LEGACY_RECORDS, type TableColumns, USERS } from './table-columns.ts';

export interface StagingTable {
  name: string;
  columns: readonly (readonly [name: string, type: string])[];
}

/** The staging table of a descriptor (table-columns.ts): its columns, then `extra`. */
const stagingOf = (
  table: Pick<TableColumns<never>, 'staging' | 'columns'>,
  extra: StagingTable['columns'] = [],
): StagingTable => ({
  name: table.staging,
  columns: [...table.columns.map(({ name, type }) => [name, type] as const), ...extra],
});

export const STAGE = {
  /** apply true: becomes the current version in records; false: goes to record_versions. */
  records: stagingOf(RECORDS, [['apply', 'boolean']]),
  users: stagingOf(USERS),
  events: stagingOf(CONNECTION_EVENTS),
  legacy: stagingOf(LEGACY_RECORDS),
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
