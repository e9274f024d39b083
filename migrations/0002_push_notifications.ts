/**
 * 0002: `validic_sync.push_notifications`, every push POST received by the worker's push endpoint,
 * stored BEFORE it is interpreted so that a body of a shape we do not know is never lost.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const columns: [name: string, type: string, comment: string][] = [
  ['id', 'bigint generated always as identity', 'Row id.'],
  ['org_id', 'text', 'Validic organization the notification was routed to (null when it could not be told).'],
  ['received_at', 'timestamptz not null default now()', 'When the endpoint received the POST.'],
  ['content_type', 'text', 'Content-Type header of the POST.'],
  ['raw', 'text not null', 'The body exactly as received (text).'],
  ['parsed', 'jsonb', 'The body parsed as JSON; null when it is not JSON.'],
  [
    'status',
    'text not null',
    'received (stored, not yet interpreted), queued (every item became a retrieval job), partial (some items were not understood), unrecognized (no item understood; kept for inspection), failed (items understood but queueing failed; see error).',
  ],
  ['items', 'integer not null default 0', 'Items recognized in the body.'],
  ['enqueued', 'integer not null default 0', 'Retrieval jobs queued for those items (repeats excluded).'],
  ['error', 'text', 'Why the body or some items were not understood, or why queueing failed.'],
  ['processed_at', 'timestamptz', 'When the notification was interpreted.'],
];

export async function up(db: Kysely<any>): Promise<void> {
  const table = 'validic_sync.push_notifications';
  const statements = [
    `create table ${table} (
      ${columns.map(([name, type]) => `${name} ${type}`).join(',\n      ')},
      primary key (id),
      check (status in ('received','queued','partial','unrecognized','failed'))
    )`,
    `comment on table ${table} is ${quote('Push notifications (v1 enterprise push) received by the worker, stored before being interpreted; each recognized item became a legacy.fetch job.')}`,
    ...columns.map(([name, , comment]) => `comment on column ${table}.${name} is ${quote(comment)}`),
    `create index push_notifications_received_idx on ${table} (received_at)`,
    `create index push_notifications_status_idx on ${table} (status) where status <> 'queued'`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw('drop table if exists validic_sync.push_notifications').execute(db);
}
