/**
 * Reading the named cursors of `validic_sync.checkpoints`. Cursors are only WRITTEN by applyBatch, in
 * the same transaction as the data they cover, so a cursor never runs ahead of committed data.
 */
import type { Kysely } from 'kysely';
import type { Database } from './database.ts';

export interface CursorEntry {
  key: string;
  value: unknown;
  updatedAt: Date;
}

/** The cursor's value, or undefined when it was never written. */
export async function readCursor<T = unknown>(
  db: Kysely<Database>,
  orgId: string,
  key: string,
): Promise<T | undefined> {
  const row = await db
    .selectFrom('validic_sync.checkpoints')
    .select('value')
    .where('org_id', '=', orgId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row ? (row.value as T) : undefined;
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
