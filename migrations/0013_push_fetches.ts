/**
 * 0013: the durable queue of push-triggered fetches.
 *
 * - `validic_sync.push_fetches`: one row per retrieval a push notification asked for. Items for the same
 *   (org, object, user, kind of retrieval) join the row that is still pending instead of adding one, so
 *   a population pushing all day holds at most one pending fetch per (user, object). The push.drain job
 *   claims due rows at no more than push's share of the request budget; the rest waits here.
 * - `validic_sync.push_refusals`: minutes in which notifications were refused (429) at the per-minute cap,
 *   so they can be counted and covered by a legacy `latest` pass.
 * - `validic_sync.push_notifications.items_processed`: how far a notification's items have been stored
 *   (a notification is processed in parts; a part commits with its progress).
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
const fetches = 'validic_sync.push_fetches';
const refusals = 'validic_sync.push_refusals';
const notifications = 'validic_sync.push_notifications';

const fetchColumns: [name: string, type: string, comment: string][] = [
  ['id', 'bigint generated always as identity', 'Row id (legacy.fetch jobs name it).'],
  ['org_id', 'text not null', 'Validic organization.'],
  ['object', 'text not null', 'Legacy object to read (fitness, routine, …).'],
  [
    'mode',
    'text not null',
    "activity: the user's object list by activity date (the provider's documented item); updated: a latest window by last_updated; record: one record by id; refused: an org-level latest window over minutes whose notifications were refused (429).",
  ],
  ['user_id', "text not null default ''", 'Service user _id; empty for an org-level read.'],
  ['record_id', "text not null default ''", 'Record _id (mode record); empty otherwise.'],
  [
    'bucket',
    "text not null default ''",
    "UTC hour of the window (modes updated and refused: keeps one fetch's window within about an hour); empty otherwise.",
  ],
  [
    'range_start',
    'timestamptz',
    'activity: earliest announced activity_date; updated and refused: start of the last_updated window. Null: the last sync.legacyWindowHours when it runs.',
  ],
  [
    'range_end',
    'timestamptz',
    'activity: latest announced activity_date; updated and refused: end of the window.',
  ],
  ['sources', 'text[]', 'Sources (apps) announced; null: any source.'],
  ['items', 'integer not null default 0', 'Items (or refused minutes) this fetch absorbed.'],
  ['first_item_at', 'timestamptz not null', 'When its first item arrived.'],
  ['last_item_at', 'timestamptz not null', 'When its last item arrived.'],
  [
    'due_at',
    'timestamptz not null',
    'Not claimed before this (the coalescing window, or the end of a refused minute).',
  ],
  [
    'state',
    "text not null default 'pending'",
    'pending (waiting; absorbs new items), queued (claimed by push.drain, a legacy.fetch job queued), done, failed (see error).',
  ],
  [
    'claims',
    'integer not null default 0',
    'Times push.drain claimed it (more than one: a queued job was lost and queued again).',
  ],
  ['claimed_at', 'timestamptz', 'When push.drain last claimed it.'],
  ['done_at', 'timestamptz', 'When it finished (done or failed).'],
  ['requests', 'integer', 'Pages (requests) the fetch took.'],
  ['error', 'text', 'Why it failed.'],
  [
    'notification_id',
    'bigint',
    'The push notification (validic_sync.push_notifications.id) that last added to it.',
  ],
];

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    `create table ${fetches} (
      ${fetchColumns.map(([name, type]) => `${name} ${type}`).join(',\n      ')},
      primary key (id),
      check (mode in ('activity','updated','record','refused')),
      check (state in ('pending','queued','done','failed'))
    )`,
    `comment on table ${fetches} is ${quote('Push-triggered fetches, queued durably: items for the same (org, object, user, mode) join the pending row; push.drain claims due rows within the push share of the request budget and queues a legacy.fetch job for each. Bookkeeping of the worker, not data.')}`,
    ...fetchColumns.map(([name, , comment]) => `comment on column ${fetches}.${name} is ${quote(comment)}`),
    // At most one pending row per key: new items join it.
    `create unique index push_fetches_pending_key on ${fetches} (org_id, object, mode, user_id, record_id, bucket) where state = 'pending'`,
    // The drain's order: refused-minute windows first (nothing else covers them), then by due time.
    `create index push_fetches_due_idx on ${fetches} (org_id, (mode <> 'refused'), due_at, id) where state = 'pending'`,
    `create index push_fetches_queued_idx on ${fetches} (org_id, claimed_at) where state = 'queued'`,
    // The drain's window and the planner's last hour count claims per org.
    `create index push_fetches_claimed_idx on ${fetches} (org_id, claimed_at) where claimed_at is not null`,
    `create index push_fetches_done_idx on ${fetches} (done_at) where done_at is not null`,
    `create table ${refusals} (
      org_id text not null,
      minute timestamptz not null,
      refused integer not null default 0,
      primary key (org_id, minute)
    )`,
    `comment on table ${refusals} is ${quote('Minutes in which push notifications were refused (429) at push.ratePerMinute. A refused notification may be lost: each such minute queues an org-level legacy latest pass (push_fetches, mode refused) unless legacy.sync runs for the org.')}`,
    `comment on column ${refusals}.org_id is ${quote('Validic organization the refused notifications were counted against ((shared secret) when it could not be told).')}`,
    `comment on column ${refusals}.minute is ${quote('Start of the UTC minute.')}`,
    `comment on column ${refusals}.refused is ${quote('Notifications refused in that minute, fleet-wide (recorded at the first refusal and every 100th, so up to 99 short).')}`,
    `alter table ${notifications} add column items_processed integer not null default 0`,
    `comment on column ${notifications}.items_processed is ${quote('Items of the body processed so far (stored as pending fetches, or found unroutable); a notification is processed in parts of push.maxItems, each part committed with this count.')}`,
    `comment on column ${notifications}.status is ${quote('received (stored, its items not yet: push.drain resumes it), queued (every item stored as a pending fetch), partial (some items were not understood), unrecognized (no item understood; kept for inspection), failed (its items could not be stored for a day; see error).')}`,
    `comment on column ${notifications}.enqueued is ${quote('Items stored as pending fetches (validic_sync.push_fetches); an item joins the pending fetch of its user and object when there is one.')}`,
    // As 0004 does for every table: the owner role owns them, the loader (the worker) writes them.
    `alter table ${fetches} owner to validic_owner`,
    `alter table ${refusals} owner to validic_owner`,
    `grant select, insert, update, delete on ${fetches}, ${refusals} to validic_loader`,
    'grant usage on all sequences in schema validic_sync to validic_loader',
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${fetches}`).execute(db);
  await sql.raw(`drop table if exists ${refusals}`).execute(db);
  await sql.raw(`alter table ${notifications} drop column if exists items_processed`).execute(db);
}
