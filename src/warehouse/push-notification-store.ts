/**
 * `validic_sync.push_notifications` (migration 0002): the raw body is stored BEFORE it is interpreted,
 * then the row is marked with what came of it.
 */
import type { Generated, Kysely } from 'kysely';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import type { Database } from './database.ts';

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
  const batchSize = options.batchSize ?? 10_000;
  let total = 0;
  while (!options.signal?.aborted) {
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
    const n = Number(deleted.numDeletedRows);
    total += n;
    if (n < batchSize) break;
  }
  return total;
}
