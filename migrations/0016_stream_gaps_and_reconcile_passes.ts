/**
 * 0016: `validic_sync.stream_gaps`, the spans in which the stream may have lost events (an unclean end of
 * a connection, a replay that could not fill its gap), and `validic_sync.reconcile_passes`, the passes
 * of the reconciliation stream that cover them. A gap stays open until a pass covers it; what a pass
 * brings that the warehouse held nowhere is what the primary stream missed (the measured loss rate).
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

type Columns = [name: string, type: string, comment: string][];

const GAPS = 'validic_sync.stream_gaps';
const PASSES = 'validic_sync.reconcile_passes';

const gapColumns: Columns = [
  ['id', 'bigint generated always as identity primary key', 'Gap id.'],
  ['org_id', 'text not null', 'Validic organization.'],
  ['stream_name', 'text not null', 'The primary stream the gap is in.'],
  ['slot', 'integer not null', 'The connection slot (0..2) that saw it.'],
  [
    'gap_from',
    'timestamptz not null',
    'Start of the span (platform time, created_at): the newest created_at committed before it.',
  ],
  [
    'gap_to',
    'timestamptz not null',
    'End of the span (platform time): when reading stopped, or the replay gave up.',
  ],
  [
    'reason',
    'text not null',
    'crash, dropped, stale, commit-failed, stopped (unclean ends of a connection); beyond-replay, stream-checkpoint-expired, replay-unavailable, replay-timed-out (a replay that could not fill its gap).',
  ],
  ['recorded_at', 'timestamptz not null default now()', 'When the gap was recorded.'],
  [
    'handled_by',
    'text not null',
    "reconcile: the reconciliation stream's next pass covers it; rest: a REST backfill of its days was queued (older than the reconciliation stream reaches, or no reconciliation stream); planned: no queue, the log names the backfill command.",
  ],
  ['covered_at', 'timestamptz', 'When a reconciliation pass covered it (null: open).'],
  ['covered_by_pass', 'bigint', 'The pass that covered it (validic_sync.reconcile_passes.id).'],
];

const passColumns: Columns = [
  ['id', 'bigint generated always as identity primary key', 'Pass id.'],
  ['org_id', 'text not null', 'Validic organization.'],
  ['stream_name', 'text not null', 'Name of the reconciliation stream.'],
  ['stream_id', 'text not null', 'Platform id of the reconciliation stream.'],
  [
    'trigger',
    'text not null',
    'schedule, gap (brought forward by a gap) or command (validic-sync reconcile).',
  ],
  ['started_at', 'timestamptz not null', 'When the pass connected.'],
  ['ended_at', 'timestamptz', 'When it ended (null while running, or if its process died).'],
  ['outcome', 'text not null', 'running, caught-up, timed-out, failed or stopped.'],
  [
    'chain_from',
    'timestamptz not null',
    'Platform time from which the chain of passes this one belongs to has re-delivered everything (the stream was created, or restarted after 7 days unconnected).',
  ],
  [
    'reach_from',
    'timestamptz not null',
    'Platform time this pass re-delivers from: where the previous pass left off.',
  ],
  [
    'reach_to',
    'timestamptz',
    'Platform time up to which this pass re-delivered everything (set when caught up).',
  ],
  ['frames', 'integer not null default 0', 'Data frames read.'],
  [
    'missed',
    'integer not null default 0',
    'Record versions and connection events the warehouse held nowhere (not current, not kept as an older version) when the pass brought them: what the primary stream missed.',
  ],
  ['inserted', 'integer not null default 0', "Records and events the pass inserted (the loader's count)."],
  [
    'updated',
    'integer not null default 0',
    "Records the pass moved to a newer version (the loader's count).",
  ],
  ['unchanged', 'integer not null default 0', 'Already stored at this version.'],
  ['stale', 'integer not null default 0', 'Older than the stored version (kept in record_versions).'],
  ['quarantined', 'integer not null default 0', 'Rejected items (validic_sync.quarantine).'],
];

function tableStatements(table: string, columns: Columns, comment: string, extra: string[]): string[] {
  return [
    `create table ${table} (
      ${columns.map(([name, type]) => `${name} ${type}`).join(',\n      ')}${extra.length ? `,\n      ${extra.join(',\n      ')}` : ''}
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
      GAPS,
      gapColumns,
      'Spans of platform time in which the stream may have lost events, open until a reconciliation pass covers them. Bookkeeping of the worker, not data.',
      ['unique (org_id, stream_name, slot, reason, gap_from, gap_to)'],
    ),
    `create index stream_gaps_open on ${GAPS} (org_id, gap_from) where covered_at is null`,
    ...tableStatements(
      PASSES,
      passColumns,
      'Passes of the reconciliation stream: what each re-delivered, and how much of it the primary stream had missed. Bookkeeping of the worker, not data.',
      [],
    ),
    `create index reconcile_passes_org on ${PASSES} (org_id, started_at desc)`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${PASSES}`).execute(db);
  await sql.raw(`drop table if exists ${GAPS}`).execute(db);
}
