/**
 * 0020: removes the `poll:<uid>:<resource>` cursors. records.poll wrote one on every poll and nothing
 * read them (the backfill ledger and the recent polls' table say what was polled); at 100,000 users
 * × 7 resources they were 700,000 rows of validic_sync.checkpoints for nothing. The job no longer writes
 * them. Not reversible (the rows carried nothing that is read), so `down` does nothing.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql.raw(`delete from validic_sync.checkpoints where key like 'poll:%'`).execute(db);
}

export async function down(_db: Kysely<any>): Promise<void> {}
