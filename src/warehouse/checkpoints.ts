/**
 * Reading the named cursors of `validic_sync.checkpoints`, each through its kind (cursors/). Cursors are
 * only WRITTEN by applyBatch, in the same transaction as the data they cover, so a cursor never runs
 * ahead of committed data. `listCursors` gives the stored values as they are (for `status`).
 */
import type { Kysely } from 'kysely';
import type { Cursor } from './cursors/define-cursor.ts';
import type { Database } from './database.ts';

export interface CursorEntry {
  key: string;
  value: unknown;
  updatedAt: Date;
}

/** The value stored under `key`, unparsed; undefined when it was never written. */
async function readStoredValue(db: Kysely<Database>, orgId: string, key: string): Promise<unknown> {
  const row = await db
    .selectFrom('validic_sync.checkpoints')
    .select('value')
    .where('org_id', '=', orgId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row?.value;
}

/**
 * A cursor's value parsed by its kind (cursors/): undefined when it was never written or its stored
 * value is not of the kind's shape.
 */
export async function readCursor<Value>(
  db: Kysely<Database>,
  orgId: string,
  cursor: Cursor<Value, any>,
): Promise<Value | undefined> {
  return cursor.parse(await readStoredValue(db, orgId, cursor.key));
}

/** All cursors of an org (optionally those whose key starts with `prefix`), by key. */
export async function listCursors(
  db: Kysely<Database>,
  orgId: string,
  prefix?: string,
): Promise<CursorEntry[]> {
  let query = db
    .selectFrom('validic_sync.checkpoints')
    .select(['key', 'value', 'updated_at'])
    .where('org_id', '=', orgId)
    .orderBy('key');
  if (prefix) query = query.where('key', 'like', `${prefix.replace(/[\\%_]/g, '\\$&')}%`);
  const rows = await query.execute();
  return rows.map((r) => ({ key: r.key, value: r.value, updatedAt: r.updated_at }));
}
