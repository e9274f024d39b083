/**
 * 0040: the scheduled audit draws a random sample within each stratum and judges only cells some sync has
 * covered (src/audit/README.md).
 *
 * - `validic_sync.audits` keeps each tick's stratum populations (what its estimate is scaled to) and the
 *   cells it found not yet synced (`cells_unsynced`; `audit_cells.outcome` 'unsynced', not judged).
 * - `backfill_windows_done_cells`: the done ledger windows of a user and resource, which a cell's check
 *   "has a backfill loaded these days" reads (a few index probes, whatever the ledger's size).
 * - The rotation's cursor (`audit:rotation`) goes: ticks no longer walk the users in uid order.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
const AUDITS = 'validic_sync.audits';
const CELLS = 'validic_sync.audit_cells';

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    `alter table ${AUDITS} add column population_recent bigint`,
    `alter table ${AUDITS} add column population_history bigint`,
    `alter table ${AUDITS} add column cells_unsynced integer not null default 0`,
    `comment on column ${AUDITS}.population_recent is ${quote('A tick: cells of its recent stratum (users × resources), null for a command run.')}`,
    `comment on column ${AUDITS}.population_history is ${quote('A tick: cells of its history stratum (users × resources × 30-day grid windows), null for a command run.')}`,
    `comment on column ${AUDITS}.cells_unsynced is ${quote('A tick: cells drawn whose days no sync had covered yet (not fetched, not judged).')}`,
    `comment on column ${AUDITS}.kind is ${quote('command (validic-sync audit: a simple random sample of the range) or schedule (a tick of records.audit: a simple random sample within each stratum, recent and history).')}`,
    `comment on column ${CELLS}.outcome is ${quote('complete, drift, failed (the platform refused the cell), or unsynced (a scheduled cell whose days no sync had covered yet: not fetched, not judged).')}`,
    `create index backfill_windows_done_cells on validic_sync.backfill_windows (org_id, uid, resource, start_date)
       include (end_date) where status = 'done'`,
    `delete from validic_sync.checkpoints where key = 'audit:rotation'`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const statement of [
    'drop index if exists validic_sync.backfill_windows_done_cells',
    `alter table ${AUDITS} drop column if exists cells_unsynced`,
    `alter table ${AUDITS} drop column if exists population_history`,
    `alter table ${AUDITS} drop column if exists population_recent`,
  ])
    await sql.raw(statement).execute(db);
}
