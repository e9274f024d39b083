/**
 * 0028: a record version is (id, checksum, created_at, deleted or not), not (id, checksum).
 *
 * The platform's checksum need not cover `deleted_at`, and a deleted record can come back with the
 * checksum it had before the delete and a later created_at. Keyed on (id, checksum) alone, the version
 * before a delete, the delete and the revival were one version: the revival was ignored (the record
 * stayed deleted) and the version before the delete was never kept. `record_versions_key` now holds
 * every distinct version apart; the rows already stored are unique on it too (it only adds columns).
 *
 * `down` keeps one row per (org_id, record_id, checksum, start_time), the latest created_at, so the
 * old key can be built again.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const TABLE_COMMENT =
  'Versions of records that are not (or no longer) current: every distinct version seen, (id, checksum, created_at, deleted or not), except the one in records. A deleted record the platform revives keeps here the version before its delete and the delete. Partitioned by month of start_time.';
const OLD_TABLE_COMMENT =
  'Versions of records that are not (or no longer) current: every distinct (id, checksum) seen except the one in records. Partitioned by month of start_time.';

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of [
    'drop index validic.record_versions_key',
    `create unique index record_versions_key on validic.record_versions
       (org_id, record_id, checksum, created_at, deleted_at, start_time) nulls not distinct`,
    `comment on table validic.record_versions is ${quote(TABLE_COMMENT)}`,
  ]) {
    await sql.raw(statement).execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const statement of [
    `delete from validic.record_versions v
       where exists (select 1 from validic.record_versions w
                     where w.org_id = v.org_id and w.record_id = v.record_id and w.checksum = v.checksum
                       and w.start_time is not distinct from v.start_time
                       and (w.created_at, w.deleted_at is not null) > (v.created_at, v.deleted_at is not null))`,
    'drop index validic.record_versions_key',
    `create unique index record_versions_key on validic.record_versions
       (org_id, record_id, checksum, start_time) nulls not distinct`,
    `comment on table validic.record_versions is ${quote(OLD_TABLE_COMMENT)}`,
  ]) {
    await sql.raw(statement).execute(db);
  }
}
