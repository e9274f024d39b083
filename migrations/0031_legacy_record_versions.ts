/**
 * 0031: `validic.legacy_record_versions`, the history of legacy (v1) records, as record_versions is for
 * v2 records. An update of a legacy record (a later `last_updated`) replaced its row and the version
 * before it was gone; now the replaced row is kept here, and so is a version that arrived too late to
 * be current (an older `last_updated`). Every distinct version seen but the current one: a version is
 * the record's document (`raw`, whose `last_updated` says when the platform last changed it).
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
const table = 'validic.legacy_record_versions';

const ARRIVED_VIA = ['poll', 'stream', 'replay', 'legacy', 'push', 'reconcile', 'audit'];

const columns: [name: string, type: string, comment: string][] = [
  ['org_id', 'text not null', 'Validic organization id the row belongs to.'],
  ['object', 'text not null', 'Legacy object name, e.g. fitness, routine, weight (legacy_records.object).'],
  ['id', 'text not null', 'Legacy record id (_id; legacy_records.id).'],
  ['last_updated', 'timestamptz', "This version's last_updated: when the platform last changed the record."],
  [
    'deleted_at',
    'timestamptz',
    'Set when this version was the current one of a record the worker had found deleted (legacy_records.deleted_at) before a later version brought it back.',
  ],
  ['raw', 'jsonb not null', 'This version exactly as received.'],
  [
    'arrived_via',
    `text not null check (arrived_via in (${ARRIVED_VIA.map(quote).join(', ')}))`,
    'How this version reached the warehouse (see legacy_records.arrived_via).',
  ],
  [
    'archived_at',
    'timestamptz not null default now()',
    'When this version stopped being current, or was kept as an older one.',
  ],
];

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    `create table ${table} (
      ${columns.map(([name, type]) => `${name} ${type}`).join(',\n      ')}
    )`,
    // One row per distinct version; jsonb's text is canonical, so equal documents hash alike.
    `create unique index legacy_record_versions_key on ${table} (org_id, object, id, md5(raw::text))`,
    `comment on table ${table} is ${quote('Versions of legacy (v1) records that are not (or no longer) current: every distinct version seen, except the one in legacy_records. An update of a record keeps the version it replaced here.')}`,
    ...columns.map(([name, , comment]) => `comment on column ${table}.${name} is ${quote(comment)}`),
    `do $$ begin
       alter table ${table} alter column raw set compression lz4;
     exception when feature_not_supported then null;
     end $$`,
    `alter table ${table} owner to validic_owner`,
    `grant select, insert, update, delete on ${table} to validic_loader`,
    `grant select on ${table} to validic_analyst`,
    'select validic_sync.refresh_row_level_security()',
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${table}`).execute(db);
}
