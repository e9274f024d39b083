/**
 * 0007: deletes of every kind reach the warehouse.
 *
 * - `validic.users.removed_at`: when the worker found the user gone from the platform (absent from a
 *   complete users listing, or 404 on the user itself); such users are no longer polled. Cleared when
 *   a listing shows the user again.
 * - `validic.legacy_records.deleted_at`: when the worker found the legacy record gone (404 on the record
 *   by id). The legacy views (`validic.legacy_<object>`, 0001) now leave deleted rows out, as the v2
 *   views do; the table keeps them.
 *
 * The legacy views are rewritten from their stored definitions (pg_get_viewdef) with one more condition,
 * so this frozen migration does not repeat 0001's column lists; their options (security_invoker from
 * 0004), comments and grants stay.
 *
 * Frozen in time: never imports application code.
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const COMMENTS: [column: string, comment: string][] = [
  [
    'validic.users.removed_at',
    'When the worker found this user gone from the platform: absent from a complete users listing, or answering 404 itself. Removed users are no longer polled; null while the user is listed (a user listed again is un-removed).',
  ],
  [
    'validic.legacy_records.deleted_at',
    'When the worker found this record deleted on the platform (a 404 for the record by id, asked after a push announced it or after a complete re-read of a window that should have listed it no longer did). The time of discovery: the platform does not say when. The legacy_<object> views leave deleted rows out.',
  ],
];

/** Every legacy view: its definition gets (or loses) `and deleted_at is null`. */
function rewriteLegacyViews(edit: string): string {
  return `do $$ declare v record; def text; begin
  for v in select c.relname, c.reloptions, pg_get_viewdef(c.oid) as def
           from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'validic' and c.relkind = 'v' and c.relname like 'legacy\\_%'
  loop
    def := rtrim(rtrim(v.def), ';');
    ${edit}
    execute format('create or replace view validic.%I %s as %s', v.relname,
      case when v.reloptions is null then '' else format('with (%s)', array_to_string(v.reloptions, ', ')) end,
      def);
  end loop;
end $$`;
}

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table validic.users add column removed_at timestamptz`.execute(db);
  await sql`alter table validic.legacy_records add column deleted_at timestamptz`.execute(db);
  for (const [column, comment] of COMMENTS) {
    await sql.raw(`comment on column ${column} is ${quote(comment)}`).execute(db);
  }
  // The views select from legacy_records alone and end with their WHERE on the object: one more AND.
  await sql.raw(rewriteLegacyViews(`def := def || ' and legacy_records.deleted_at is null';`)).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql
    .raw(
      rewriteLegacyViews(
        `def := regexp_replace(def, '\\s+AND\\s+\\(?legacy_records\\.deleted_at IS NULL\\)?', '', 'i');`,
      ),
    )
    .execute(db);
  await sql`alter table validic.legacy_records drop column deleted_at`.execute(db);
  await sql`alter table validic.users drop column removed_at`.execute(db);
}
