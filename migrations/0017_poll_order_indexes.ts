/**
 * 0017: indexes that keep the scheduler's and `status`'s reads proportional to the users they touch
 * rather than to the whole population (src/warehouse/README.md, "Reads proportional to what is due"):
 *
 * - `users_pollable_idx`: the pollable users (`removed_at is null`) in uid order, so their count is an
 *   index-only scan and the never-polled users are found in uid order without reading the table.
 * - `recent_polls_polled_idx`: the recent poll's order (oldest completed poll first, then uid), so the
 *   next slice of due users is a keyset read that stops at its limit, and the polls completed in the
 *   last period (the slowest queue-to-completion time) are a range of it.
 * - `recent_polls_enqueued_idx`: the polls queued recently (in flight, queued in the tick window, the
 *   last enqueue) as a range of it.
 *
 * uid is ordered with collation "C" (byte order) in both: the order the pure picker sorts in.
 * Idempotent (`if not exists`), like the others. Frozen in time: this file never imports application
 * code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const statements = [
  `create index if not exists users_pollable_idx on validic.users (org_id, uid collate "C") where removed_at is null`,
  `create index if not exists recent_polls_polled_idx on validic_sync.recent_polls (org_id, polled_at, uid collate "C")`,
  `create index if not exists recent_polls_enqueued_idx on validic_sync.recent_polls (org_id, enqueued_at)`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const index of [
    'validic_sync.recent_polls_enqueued_idx',
    'validic_sync.recent_polls_polled_idx',
    'validic.users_pollable_idx',
  ])
    await sql.raw(`drop index if exists ${index}`).execute(db);
}
