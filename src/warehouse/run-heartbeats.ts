/**
 * Who holds a run (`validic_sync.runs`, `validic_sync.audits`), and how `status` tells a live run from
 * one whose process died (migration 0042; src/metrics/README.md, "Runs and their holders").
 *
 * A heartbeat, not a pid and a host: `status` may run on another machine than the run (a pid is not
 * checkable there, and pids are reused), and a run of the worker has no one process (BullMQ moves a dead
 * replica's jobs to another). So each run names its holder, the worker fleet or one command's process,
 * and the holder renews `heartbeat_at` every RUN_HEARTBEAT_MS while it lives; a running row whose heartbeat
 * is older than RUN_STALE_MS (four missed beats) lost its process, whatever killed it (SIGKILL, a crash,
 * a host gone). A command that ends before its run is done marks it interrupted itself, at once.
 */
import { hostname } from 'node:os';
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

/** How often a holder renews its runs' heartbeat. */
export const RUN_HEARTBEAT_MS = 15_000;
/** A running row whose heartbeat is older than this lost its process: shown as interrupted. */
export const RUN_STALE_MS = 60_000;

/** The holder of the worker's runs: any live replica of the fleet renews them. */
export const WORKER_RUN_HOLDER = 'worker';

/** The holder of this process's runs when it is a one-shot command. */
export function commandRunHolder(): string {
  return `command ${hostname()} pid ${process.pid}`;
}

/** Renews the heartbeat of the holder's running runs and unfinished audit runs (one statement each). */
export async function heartbeatRuns(db: Kysely<Database>, holder: string): Promise<void> {
  await sql`update validic_sync.runs set heartbeat_at = now()
            where holder = ${holder} and status = 'running'`.execute(db);
  await sql`update validic_sync.audits set heartbeat_at = now()
            where holder = ${holder} and ended_at is null`.execute(db);
}

/**
 * The holder is going away (a one-shot command closing): its runs that are not done are interrupted
 * (the same command resumes a backfill), its unfinished audit runs end as interrupted.
 */
export async function releaseRuns(db: Kysely<Database>, holder: string): Promise<void> {
  await sql`update validic_sync.runs set status = 'interrupted', finished_at = now()
            where holder = ${holder} and status = 'running'`.execute(db);
  await sql`update validic_sync.audits set ended_at = now(), interrupted = true
            where holder = ${holder} and ended_at is null`.execute(db);
}

/**
 * Whether a run still marked running has lost its process: its last heartbeat (its start, for a row from
 * before heartbeats) is older than RUN_STALE_MS at `now`.
 */
export function heartbeatStopped(
  run: { heartbeatAt: Date | string | null; startedAt: Date | string },
  now: Date,
): boolean {
  const last = new Date(run.heartbeatAt ?? run.startedAt).getTime();
  return now.getTime() - last > RUN_STALE_MS;
}
