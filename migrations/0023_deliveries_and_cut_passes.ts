/**
 * 0023: a reconciliation pass is one kind of delivery among two. `validic_sync.reconcile_passes` also
 * keeps the passes that read the provider's replay (`source = 'replay'`), what each delivered without a
 * break (`cover_from`), what it had committed and when it stopped reading (a cut pass is a gap of its
 * own), and who runs it (`host`, `pid`, `heartbeat_at`: a row whose process is gone is `interrupted`,
 * not `running` for ever). Gaps may now be handled by a replay.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const PASSES = 'validic_sync.reconcile_passes';
const GAPS = 'validic_sync.stream_gaps';

const newPassColumns: [name: string, type: string, comment: string][] = [
  [
    'source',
    "text not null default 'stream'",
    "stream: a pass of the reconciliation stream (it resumes where its last pass stopped reading); replay: the provider's replay from a date (replay_date), read until an event created at or after its target.",
  ],
  ['replay_date', 'date', 'source replay: the UTC date the replay started from.'],
  [
    'cover_from',
    'timestamptz',
    'Platform time from which this delivery re-delivered everything without a break: a gap is covered only when it starts at or after this and ends at or before reach_to.',
  ],
  [
    'committed_to',
    'timestamptz',
    'Platform time up to which everything this delivery read was committed (the newest created_at committed by its slowest connection): where the gap of a cut delivery starts.',
  ],
  [
    'read_to',
    'timestamptz',
    'Platform time when it stopped reading: the reconciliation stream has sent nothing created later, so its next pass re-delivers from here.',
  ],
  [
    'next_cover_from',
    'timestamptz',
    "source stream: where the next pass of the reconciliation stream re-delivers from without a break: this pass's cover_from when it ended with nothing in flight (on pokes), else read_to.",
  ],
  ['host', 'text', 'Host name of the process running it.'],
  ['pid', 'integer', 'Process id running it.'],
  [
    'heartbeat_at',
    'timestamptz',
    'Last sign of life of its process (every batch, and every 10 s): a running row without one for 2 minutes, or whose process is gone from its host, is interrupted.',
  ],
];

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    ...newPassColumns.flatMap(([name, type, comment]) => [
      `alter table ${PASSES} add column ${name} ${type}`,
      `comment on column ${PASSES}.${name} is ${quote(comment)}`,
    ]),
    `comment on table ${PASSES} is ${quote('Deliveries that re-send what the primary stream may have lost: passes of the reconciliation stream, and replays of the gaps it cannot reach. What each re-delivered, and how much of it the primary stream had missed. Bookkeeping of the worker, not data.')}`,
    `comment on column ${PASSES}.outcome is ${quote('running, caught-up, timed-out, failed, stopped, or interrupted (its process died: found by a later run).')}`,
    `comment on column ${PASSES}.stream_name is ${quote('Name of the reconciliation stream; replay for a replay.')}`,
    `comment on column ${PASSES}.stream_id is ${quote('Platform id of the reconciliation stream; replay for a replay.')}`,
    `comment on column ${PASSES}.missed is ${quote('Record versions and connection events this delivery brought that the primary stream could not have committed: held nowhere in the warehouse, and older than what the live primary had committed (or still absent once its batch in flight had landed). The measured loss rate.')}`,
    `comment on column ${GAPS}.stream_name is ${quote('The stream the gap is in: the primary, or the reconciliation stream for a pass that was cut.')}`,
    `comment on column ${GAPS}.reason is ${quote('crash, dropped, stale, commit-failed, stopped (unclean ends of a primary connection); beyond-replay, stream-checkpoint-expired, replay-unavailable, replay-timed-out, replay-quiet (a replay that could not fill its gap); pass-crash, pass-dropped, pass-stale, pass-stopped, pass-timed-out, pass-failed, pass-commit-failed (a delivery that was cut: what it had been sent and not committed is gone from the reconciliation stream).')}`,
    `comment on column ${GAPS}.handled_by is ${quote("reconcile: the reconciliation stream's next pass covers it; replay: the provider's replay from its date covers it (older than the reconciliation stream reaches, or no reconciliation stream); rest: a REST backfill of its days (older than the replay reaches); planned: no queue, the log names the backfill command.")}`,
    `comment on column ${GAPS}.covered_by_pass is ${quote('The delivery that covered it (validic_sync.reconcile_passes.id).')}`,
    `create index reconcile_passes_running on ${PASSES} (org_id) where outcome = 'running'`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw('drop index if exists validic_sync.reconcile_passes_running').execute(db);
  for (const [name] of newPassColumns)
    await sql.raw(`alter table ${PASSES} drop column if exists ${name}`).execute(db);
}
