/**
 * 0009: `validic_sync.recent_polls`, when each user's recent poll was last queued and last completed.
 * The records.recent tick reads it to enqueue the users whose poll is oldest, a slice at a time, and to
 * count the polls still in flight (queued after the last completion), so it never queues more than the
 * request budget can serve.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
const table = 'validic_sync.recent_polls';

const columns: [name: string, type: string, comment: string][] = [
  ['org_id', 'text not null', 'Validic organization.'],
  ['uid', 'text not null', 'Validic user id (validic.users.uid).'],
  ['enqueued_at', 'timestamptz', 'When the recent poll of this user was last queued.'],
  ['polled_at', 'timestamptz', 'When the recent poll of this user last completed (every resource fetched).'],
];

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    `create table ${table} (
      ${columns.map(([name, type]) => `${name} ${type}`).join(',\n      ')},
      primary key (org_id, uid)
    )`,
    `comment on table ${table} is ${quote('Schedule of the recent poll (records.recent): when each user was last queued and last polled. Bookkeeping of the worker, not data.')}`,
    ...columns.map(([name, , comment]) => `comment on column ${table}.${name} is ${quote(comment)}`),
    // As 0004 does for every table: the owner role owns it, the loader (records.recent, records.poll)
    // writes it.
    `alter table ${table} owner to validic_owner`,
    `grant select, insert, update, delete on ${table} to validic_loader`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${table}`).execute(db);
}
