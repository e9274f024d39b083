/**
 * 0011: two more values of `arrived_via`: `reconcile` (the reconciliation stream's pass) and `audit` (a
 * repair by the completeness audit), on every table that has the column.
 *
 * Each table's check constraint is found in the catalog by what it checks (0010 renamed some of them),
 * dropped, and added again with the longer list. `not valid`: every stored row already satisfies the
 * old, narrower list, so scanning a year of partitions under an exclusive lock would prove nothing; new
 * rows are checked as before.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const TABLES = [
  'validic.records',
  'validic.record_versions',
  'validic.connection_events',
  'validic.legacy_records',
  'validic_sync.quarantine',
];

const WITH_AUDIT = ['poll', 'stream', 'replay', 'legacy', 'push', 'reconcile', 'audit'];
const WITHOUT_AUDIT = ['poll', 'stream', 'replay', 'legacy', 'push'];

const COMMENT =
  'How the stored version reached the warehouse: poll (REST backfill/poll), stream (SSE stream), replay (SSE replay), reconcile (the reconciliation stream), audit (a repair by the completeness audit), legacy (v1 API), push.';

async function replaceCheck(db: Kysely<any>, table: string, values: string[]): Promise<void> {
  const { rows } = await sql<{ name: string }>`
    select conname as name from pg_constraint
    where conrelid = ${table}::regclass and contype = 'c' and conislocal
      and pg_get_constraintdef(oid) like '%arrived_via%'`.execute(db);
  for (const { name } of rows) {
    await sql.raw(`alter table ${table} drop constraint ${quoteIdent(name)}`).execute(db);
  }
  const constraint = `${table.split('.')[1]}_arrived_via_check`;
  const list = values.map(quote).join(',');
  await sql
    .raw(`alter table ${table} add constraint ${constraint} check (arrived_via in (${list})) not valid`)
    .execute(db);
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export async function up(db: Kysely<any>): Promise<void> {
  for (const table of TABLES) {
    await replaceCheck(db, table, WITH_AUDIT);
    await sql.raw(`comment on column ${table}.arrived_via is ${quote(COMMENT)}`).execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of TABLES) await replaceCheck(db, table, WITHOUT_AUDIT);
}
