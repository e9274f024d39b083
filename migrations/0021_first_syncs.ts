/**
 * 0021: the first sync of an organization's primary stream. A new stream delivers only what is created
 * from its backlog's start on (its creation, or midnight UTC of its start date: the provider does not
 * say which), so what was created before it reaches the warehouse only by REST. Before stream-first
 * planning turns the recent poll off, every user is polled over the lookback once, by a poll queued
 * after the stream was first heard:
 *
 * - `validic_sync.first_syncs`: one row per organization and primary stream: the days to cover, where the
 *   records.recent tick goes on in uid order, and when every user was covered;
 * - `validic_sync.first_sync_polls`: each user's windows polled for it, so a restart in the middle
 *   resumes instead of starting over.
 *
 * A warehouse whose primary stream was heard before this migration (a stream checkpoint with `lastLiveAt`)
 * has its first sync marked complete (from_date null): the worker already ran on it, and polling every
 * user again would take the recent poll's share of the budget for as long as a sweep of the population.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

type Columns = [name: string, type: string, comment: string][];

const SYNCS = 'validic_sync.first_syncs';
const POLLS = 'validic_sync.first_sync_polls';

const syncColumns: Columns = [
  ['org_id', 'text not null', 'Validic organization.'],
  ['stream_name', 'text not null', 'The primary stream whose start this first sync covers.'],
  ['started_at', 'timestamptz not null default now()', 'When the worker first heard the stream and began.'],
  [
    'from_date',
    'date',
    'First day covered (UTC): the recent poll lookback before to_date. Null: completed before first syncs were tracked.',
  ],
  [
    'to_date',
    'date',
    'Last day covered (UTC): the day the stream was first heard. Records created before the stream began start on or before it.',
  ],
  [
    'next_uid',
    'text',
    'Where the next records.recent tick goes on, in uid byte order (null: from the first).',
  ],
  ['completed_at', 'timestamptz', 'When every pollable user had been covered (null: running).'],
  ['users_covered', 'integer', 'Pollable users when it completed.'],
];

const pollColumns: Columns = [
  ['org_id', 'text not null', 'Validic organization.'],
  ['stream_name', 'text not null', 'The primary stream (validic_sync.first_syncs.stream_name).'],
  ['uid', 'text not null', 'Validic user id (validic.users.uid).'],
  ['start_date', 'date not null', 'First day of the window polled (UTC).'],
  ['end_date', 'date not null', 'Last day of the window polled (UTC).'],
  [
    'polled_at',
    'timestamptz not null default now()',
    'When the poll of this window completed, every resource fetched; it was queued after the stream was first heard.',
  ],
];

function tableStatements(table: string, columns: Columns, comment: string, key: string): string[] {
  return [
    `create table ${table} (
      ${columns.map(([name, type]) => `${name} ${type}`).join(',\n      ')},
      primary key (${key})
    )`,
    `comment on table ${table} is ${quote(comment)}`,
    ...columns.map(([name, , text]) => `comment on column ${table}.${name} is ${quote(text)}`),
    // As 0004 does for every table: the owner role owns it, the loader (the worker) writes it.
    `alter table ${table} owner to validic_owner`,
    `grant select, insert, update, delete on ${table} to validic_loader`,
  ];
}

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    ...tableStatements(
      SYNCS,
      syncColumns,
      'The first sync of each primary stream: every user polled over the lookback once after the stream was first heard, covering what was created before the stream began. Bookkeeping of the worker, not data.',
      'org_id, stream_name',
    ),
    ...tableStatements(
      POLLS,
      pollColumns,
      'Windows of each user the first sync has polled. Bookkeeping of the worker, not data.',
      'org_id, stream_name, uid, start_date, end_date',
    ),
    // Streams heard before this migration: their first sync is behind them.
    `insert into ${SYNCS} (org_id, stream_name, started_at, completed_at)
      select distinct org_id, substring(key from '^stream:checkpoint:(.*):[0-9]+$'), now(), now()
      from validic_sync.checkpoints
      where key ~ '^stream:checkpoint:.*:[0-9]+$' and value->>'lastLiveAt' is not null
      on conflict do nothing`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${POLLS}`).execute(db);
  await sql.raw(`drop table if exists ${SYNCS}`).execute(db);
}
