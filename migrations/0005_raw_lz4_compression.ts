/**
 * 0005: the `raw` documents are compressed with lz4 instead of PostgreSQL's default pglz.
 *
 * A record's `raw` is a jsonb document of about 2.7 KB on the stream's mix, past the 2 KB at which
 * PostgreSQL compresses a value, so every row written pays for compression. pglz was the largest
 * single cost of writing a record (bench/stream-throughput.ts, 20,000 events, same run each):
 * COPY of the rows 8,500 → 9,900 events/s, the stream's committed rate 4,540 → 5,170 events/s.
 * lz4 also decompresses several times faster, which analysts reading `raw` feel; it compresses JSON
 * a little less tightly.
 *
 * Only rows written from now on use lz4; rows already stored stay as they are and read the same. The
 * change is metadata only (a brief lock on each table, no rewrite).
 *
 * Where the server has no lz4 (PGlite, a PostgreSQL built without it) the statement fails with
 * feature_not_supported: the column keeps pglz and the migration still succeeds, so the embedded
 * warehouse and such servers work as before, only without the speed-up.
 *
 * Frozen in time: never imports application code.
 */
import { type Kysely, sql } from 'kysely';

/** Every column holding a document as received. */
const RAW_COLUMNS = [
  'validic.records.raw',
  'validic.record_versions.raw',
  'validic.users.raw',
  'validic.connection_events.raw',
  'validic.legacy_records.raw',
  'validic_sync.quarantine.raw',
  'validic_sync.push_notifications.raw',
];

function setCompression(column: string, method: 'lz4' | 'default'): string {
  const [schema, table, name] = column.split('.');
  return `do $$ begin
  execute 'alter table ${schema}.${table} alter column ${name} set compression ${method}';
exception when feature_not_supported then
  null;
end $$`;
}

export async function up(db: Kysely<any>): Promise<void> {
  for (const column of RAW_COLUMNS) await sql.raw(setCompression(column, 'lz4')).execute(db);
}

/** Back to what 0001 left: no method of the column's own, so the server's default_toast_compression. */
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of RAW_COLUMNS) await sql.raw(setCompression(column, 'default')).execute(db);
}
