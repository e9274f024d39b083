/**
 * 0014: `validic_sync.legacy_delete_checks`, the legacy records waiting to be asked for by id.
 * A complete read of a `latest` window that no longer lists a stored record of that window makes it a
 * suspect (deleted, or edited since); a budgeted pass then asks the platform for it by id (one request
 * each): 404 marks it deleted, found loads its newer version. The rows asked in the last hour are what
 * keeps the passes within their share of the request budget, fleet-wide.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
const table = 'validic_sync.legacy_delete_checks';

const columns: [name: string, type: string, comment: string][] = [
  ['org_id', 'text not null', 'Validic organization.'],
  ['object', 'text not null', 'Legacy object (validic.legacy_records.object).'],
  ['id', 'text not null', 'Legacy record _id (validic.legacy_records.id).'],
  ['user_id', 'text not null', 'Legacy user _id the record belongs to (the by-id request needs it).'],
  [
    'absent_since',
    'timestamptz not null default now()',
    'When a complete read of a window covering the stored last_updated first did not list the record.',
  ],
  [
    'asked_at',
    'timestamptz',
    'When a delete-check pass asked the platform for the record by id (null: not yet). Rows asked in the last hour count against the budget share.',
  ],
  [
    'outcome',
    "text check (outcome in ('deleted', 'found'))",
    'deleted: the platform answered 404 and the row was marked deleted; found: its current version was loaded; null: not answered yet.',
  ],
];

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    `create table ${table} (
      ${columns.map(([name, type]) => `${name} ${type}`).join(',\n      ')},
      primary key (org_id, object, id)
    )`,
    // The pass picks the oldest unanswered suspects of an org and object, and counts the org's last hour.
    `create index legacy_delete_checks_pending on ${table} (org_id, object, absent_since) where outcome is null`,
    `create index legacy_delete_checks_asked on ${table} (org_id, asked_at)`,
    `comment on table ${table} is ${quote('Legacy records a complete window read no longer listed, waiting to be asked for by id within the share of the request budget given to delete checks. Bookkeeping of the worker, not data.')}`,
    ...columns.map(([name, , comment]) => `comment on column ${table}.${name} is ${quote(comment)}`),
    // As 0004 does for every table: the owner role owns it, the loader (legacy.latest) writes it.
    `alter table ${table} owner to validic_owner`,
    `grant select, insert, update, delete on ${table} to validic_loader`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${table}`).execute(db);
}
