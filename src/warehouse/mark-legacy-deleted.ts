/**
 * Marks stored legacy records deleted (`validic.legacy_records.deleted_at`, the time the worker found
 * out): the platform answered 404 for each of them by id. The rows stay (the legacy views leave them
 * out); a later version with a strictly later last_updated revives one (load-legacy-records.ts).
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

/** Returns the ids newly marked (rows already deleted keep their first deleted_at; unknown ids are ignored). */
export async function markLegacyDeleted(
  db: Kysely<Database>,
  orgId: string,
  object: string,
  ids: readonly string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .updateTable('validic.legacy_records')
    .set({ deleted_at: sql`now()`, updated_at: sql`now()` })
    .where('org_id', '=', orgId)
    .where('object', '=', object)
    .where('id', 'in', [...ids])
    .where('deleted_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((r) => r.id).sort();
}
