/**
 * 0018: the completeness audit (src/audit/README.md). `validic_sync.audits` holds each audit run (one
 * `audit` command per org, or one tick of the scheduled records.audit job) with its design and running
 * totals; `validic_sync.audit_cells` holds each audited cell (user × resource × ≤ 30-day window): what
 * the platform returned against what the warehouse held, and what the audit repaired.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

type Columns = [name: string, type: string, comment: string][];

const AUDITS = 'validic_sync.audits';
const CELLS = 'validic_sync.audit_cells';

const auditColumns: Columns = [
  ['id', 'bigint generated always as identity primary key', 'Audit run id.'],
  ['org_id', 'text not null', 'Validic organization.'],
  [
    'kind',
    'text not null',
    'command (validic-sync audit: a simple random sample of the range) or schedule (a tick of records.audit: recent and history strata, users in rotation).',
  ],
  ['range_from', 'date not null', 'First day of the population of cells.'],
  ['range_to', 'date not null', 'Last day of the population of cells.'],
  ['sample', 'double precision not null', 'Share of the population asked for (command); 0 for a tick.'],
  ['seed', 'text not null', 'Seed of the random choice: the same seed draws the same cells.'],
  ['population', 'bigint not null', 'Cells in the population (users × resources × windows).'],
  ['planned', 'integer not null', 'Cells drawn.'],
  ['repair', 'boolean not null', 'Whether missing and stale records were loaded (false: --no-repair).'],
  ['started_at', 'timestamptz not null default now()', 'When the run started.'],
  ['ended_at', 'timestamptz', 'When its last cell was audited (null while running, or if interrupted).'],
  ['cells_complete', 'integer not null default 0', 'Cells whose warehouse copy equalled the platform.'],
  ['cells_drift', 'integer not null default 0', 'Cells with a missing, stale or extra record.'],
  [
    'cells_failed',
    'integer not null default 0',
    'Cells the platform did not answer (not counted in the estimate).',
  ],
  ['records_equal', 'integer not null default 0', 'Records equal on both sides (id, checksum, deleted_at).'],
  [
    'records_missing',
    'integer not null default 0',
    'Records the platform returned that the warehouse lacked.',
  ],
  [
    'records_stale',
    'integer not null default 0',
    'Records the warehouse held at another version (checksum or deleted_at) than the platform.',
  ],
  [
    'records_extra',
    'integer not null default 0',
    'Records the warehouse holds (not deleted) that the platform no longer returned.',
  ],
  ['records_repaired', 'integer not null default 0', 'Missing and stale records the audit loaded.'],
];

const cellColumns: Columns = [
  ['audit_id', 'bigint not null', 'The run (validic_sync.audits.id).'],
  ['org_id', 'text not null', 'Validic organization.'],
  ['uid', 'text not null', 'The user.'],
  ['resource', 'text not null', 'v2 resource (measurements, nutrition, …).'],
  ['start_date', 'date not null', 'First day of the window.'],
  ['end_date', 'date not null', 'Last day of the window (≤ 30 days).'],
  [
    'stratum',
    'text not null',
    'all (a command run), recent (the window ending today) or history (an older window).',
  ],
  ['outcome', 'text not null', 'complete, drift or failed.'],
  ['platform_records', 'integer not null default 0', 'Records the platform returned.'],
  ['equal', 'integer not null default 0', 'Equal on both sides.'],
  ['missing', 'integer not null default 0', 'Absent from the warehouse.'],
  ['stale', 'integer not null default 0', 'Held at another version.'],
  ['extra', 'integer not null default 0', 'In the warehouse only.'],
  ['repaired', 'integer not null default 0', 'Loaded by the audit (arrived_via = audit).'],
  ['drift_ids', 'text[]', 'Ids of the missing, stale and extra records (at most 50).'],
  ['error', 'text', 'Why the cell failed.'],
  ['audited_at', 'timestamptz not null default now()', 'When the cell was audited.'],
];

function tableStatements(table: string, columns: Columns, comment: string, extra: string[]): string[] {
  return [
    `create table ${table} (
      ${columns.map(([name, type]) => `${name} ${type}`).join(',\n      ')}${extra.length ? `,\n      ${extra.join(',\n      ')}` : ''}
    )`,
    `comment on table ${table} is ${quote(comment)}`,
    ...columns.map(([name, , text]) => `comment on column ${table}.${name} is ${quote(text)}`),
    // As 0004 does for every table: the owner role owns it, the loader (the worker) writes it.
    `alter table ${table} owner to validic_owner`,
    `grant select, insert, update, delete on ${table} to validic_loader`,
  ];
}

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    ...tableStatements(
      AUDITS,
      auditColumns,
      'Runs of the completeness audit: the design, and what the cells drawn found. Bookkeeping of the worker, not data.',
      [],
    ),
    `create index audits_org on ${AUDITS} (org_id, started_at desc)`,
    ...tableStatements(
      CELLS,
      cellColumns,
      'Cells (user × resource × window) the completeness audit compared with the platform, and what it found. Bookkeeping of the worker, not data.',
      [`primary key (audit_id, uid, resource, start_date)`],
    ),
    `create index audit_cells_org_time on ${CELLS} (org_id, stratum, audited_at)`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${CELLS}`).execute(db);
  await sql.raw(`drop table if exists ${AUDITS}`).execute(db);
}
