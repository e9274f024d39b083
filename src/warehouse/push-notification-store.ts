/**
 * Push notifications in the warehouse (validic_sync.push_notifications, migration 0002): each raw body
 * stored BEFORE it is interpreted, its parts' progress, its outcome, and its pruning.
 */
import { type Generated, type Kysely, sql, type Transaction } from 'kysely';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import type { Database } from './database.ts';

/**
 * `validic_sync.push_notifications` (migration 0002): the raw body is stored BEFORE it is interpreted,
 * then the row is marked with what came of it.
 */
export type PushNotificationStatus = 'received' | 'queued' | 'partial' | 'unrecognized' | 'failed';

export interface PushNotificationsTable {
  id: Generated<number>;
  org_id: string | null;
  received_at: Generated<Date>;
  content_type: string | null;
  raw: string;
  parsed: unknown;
  status: PushNotificationStatus;
  items: Generated<number>;
  enqueued: Generated<number>;
  items_processed: Generated<number>;
  error: string | null;
  processed_at: Date | null;
}

export type PushTables = {
  'validic_sync.push_notifications': PushNotificationsTable;
};

const table = (db: Kysely<Database>) => db.withTables<PushTables>();

/** PostgreSQL text and jsonb cannot hold NUL: keep it spelled out in text, drop the jsonb copy. */
const storableText = (text: string) => text.replaceAll('\u0000', '\\u0000');
const jsonbSafe = (raw: string) => !raw.includes('\u0000') && !/\\u0000/i.test(raw);

export async function storePushNotification(
  db: Kysely<Database>,
  input: {
    raw: string;
    parsed: unknown;
    contentType: string | undefined;
    /** The organization, when the signature told it before the body was read. */
    orgId?: string | null;
  },
): Promise<number> {
  const parsed = input.parsed === undefined || !jsonbSafe(input.raw) ? null : JSON.stringify(input.parsed);
  const row = await table(db)
    .insertInto('validic_sync.push_notifications')
    .values({
      raw: storableText(input.raw),
      parsed,
      content_type: input.contentType ?? null,
      status: 'received',
      org_id: input.orgId ?? null,
      error: null,
      processed_at: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function markPushNotification(
  db: Kysely<Database>,
  id: number,
  outcome: {
    status: Exclude<PushNotificationStatus, 'received'>;
    orgId: string | null;
    items: number;
    enqueued: number;
    error: string | null;
  },
): Promise<void> {
  await table(db)
    .updateTable('validic_sync.push_notifications')
    .set({
      status: outcome.status,
      org_id: outcome.orgId,
      items: outcome.items,
      enqueued: outcome.enqueued,
      error: outcome.error === null ? null : redactKnownSecrets(outcome.error).slice(0, 4000),
      processed_at: new Date(),
    })
    .where('id', '=', id)
    .execute();
}

/**
 * Deletes stored notifications received before `before`, in batches (short transactions, no long lock
 * on a busy table); stops between batches when `signal` aborts. Returns the rows deleted.
 */
export async function prunePushNotifications(
  db: Kysely<Database>,
  before: Date,
  options: { batchSize?: number; signal?: AbortSignal } = {},
): Promise<number> {
  return await deleteInBatches(options, async (batchSize) => {
    const deleted = await table(db)
      .deleteFrom('validic_sync.push_notifications')
      .where(
        'id',
        'in',
        table(db)
          .selectFrom('validic_sync.push_notifications')
          .select('id')
          .where('received_at', '<', before)
          .limit(batchSize),
      )
      .executeTakeFirst();
    return Number(deleted.numDeletedRows);
  });
}

/**
 * Runs `deleteBatch` (deleting at most `batchSize` rows) until a batch deletes fewer or `signal` aborts:
 * short transactions, no long lock on a busy table. Returns the rows deleted.
 */
export async function deleteInBatches(
  options: { batchSize?: number; signal?: AbortSignal },
  deleteBatch: (batchSize: number) => Promise<number>,
): Promise<number> {
  const batchSize = options.batchSize ?? 10_000;
  let total = 0;
  while (!options.signal?.aborted) {
    const n = await deleteBatch(batchSize);
    total += n;
    if (n < batchSize) break;
  }
  return total;
}

export async function markPushPartStored(
  trx: Kysely<Database> | Transaction<Database>,
  id: number,
  to: number,
  stored: number,
): Promise<void> {
  await sql`
    update validic_sync.push_notifications
    set items_processed = ${to}, enqueued = enqueued + ${stored}
    where id = ${id}`.execute(trx);
}

/**
 * How many items of notification `id` are processed, its row locked for the caller's transaction (so a
 * resumption and a slow first attempt never store one part twice); undefined when there is no such row.
 */
export async function lockPushProgress(
  trx: Kysely<Database> | Transaction<Database>,
  id: number,
): Promise<number | undefined> {
  const row = await sql<{ items_processed: number }>`
    select items_processed from validic_sync.push_notifications where id = ${id} for update`.execute(trx);
  return row.rows[0]?.items_processed;
}

/** A stored notification not processed yet (status `received`). */
export interface UnprocessedPush {
  id: number;
  org_id: string | null;
  raw: string;
  parsed: unknown;
  received_at: Date;
}

/** Notifications of `orgId` (or of no org yet) received before `olderThan` and not processed, oldest first. */
export async function listUnprocessedPushes(
  db: Kysely<Database>,
  input: { orgId: string; olderThan: Date; limit: number },
): Promise<UnprocessedPush[]> {
  const rows = await sql<UnprocessedPush>`
    select id, org_id, raw, parsed, received_at from validic_sync.push_notifications
    where status = 'received' and received_at < ${input.olderThan}
      and (org_id = ${input.orgId} or org_id is null)
    order by id limit ${input.limit}`.execute(db);
  return rows.rows;
}

/** A minute's refusals of a push source (`key`): the most counted so far wins. */
