/**
 * 0042: a run whose process died is shown as interrupted, not running for ever (src/metrics/README.md,
 * "Runs and their holders").
 *
 * - `validic_sync.runs` and `validic_sync.audits` get a `holder` (the worker fleet, or one command's
 *   process) and a `heartbeat_at` the holder renews while it lives; `status` shows a run whose heartbeat
 *   has stopped as interrupted.
 * - A run's status may be `interrupted`: a one-shot command that ends before its run is done (Ctrl-C, a
 *   refused token, failed windows) says so as it closes; running the same command again resumes it.
 *   An audit run so ended keeps `ended_at` and `interrupted`.
 *
 * Rows from before have no holder: a running one is judged by its start time, so it shows interrupted
 * once older than a heartbeat's span (its process is not known to be alive).
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
const RUNS = 'validic_sync.runs';
const AUDITS = 'validic_sync.audits';

const HOLDER =
  'Who runs it: worker (the worker fleet, any replica) or command <host> pid <pid> (one command’s process); null for rows from before migration 0042.';
const HEARTBEAT =
  'Renewed every 15 s by the holder while it lives: a running row whose heartbeat is over a minute old lost its process (status shows it interrupted).';

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    `alter table ${RUNS} add column holder text`,
    `alter table ${RUNS} add column heartbeat_at timestamptz`,
    `alter table ${RUNS} drop constraint if exists runs_status_check`,
    `alter table ${RUNS} add constraint runs_status_check check (status in ('running','done','failed','interrupted'))`,
    `comment on column ${RUNS}.status is ${quote('running, done, failed, or interrupted (its command ended before the run was done: the same command resumes it).')}`,
    `comment on column ${RUNS}.holder is ${quote(HOLDER)}`,
    `comment on column ${RUNS}.heartbeat_at is ${quote(HEARTBEAT)}`,
    `alter table ${AUDITS} add column holder text`,
    `alter table ${AUDITS} add column heartbeat_at timestamptz`,
    `alter table ${AUDITS} add column interrupted boolean not null default false`,
    `comment on column ${AUDITS}.holder is ${quote(HOLDER)}`,
    `comment on column ${AUDITS}.heartbeat_at is ${quote(HEARTBEAT)}`,
    `comment on column ${AUDITS}.interrupted is ${quote('The run ended before its last cell (its command stopped: Ctrl-C, an error); ended_at is when.')}`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const statement of [
    `alter table ${AUDITS} drop column if exists interrupted`,
    `alter table ${AUDITS} drop column if exists heartbeat_at`,
    `alter table ${AUDITS} drop column if exists holder`,
    `update ${RUNS} set status = 'failed' where status = 'interrupted'`,
    `alter table ${RUNS} drop constraint if exists runs_status_check`,
    `alter table ${RUNS} add constraint runs_status_check check (status in ('running','done','failed'))`,
    `alter table ${RUNS} drop column if exists heartbeat_at`,
    `alter table ${RUNS} drop column if exists holder`,
  ])
    await sql.raw(statement).execute(db);
}
