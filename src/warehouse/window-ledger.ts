/**
 * The backfill ledger (validic_sync.backfill_runs and backfill_windows): runs, their planned windows,
 * and a run finished once its last window is done.
 */
import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

/**
 * The backfill ledger: a run (`validic_sync.runs`) and the windows it must fetch
 * (`validic_sync.backfill_windows`). A resumed run re-plans the same windows (idempotent) and fetches
 * only the pending ones; a window is marked done by applyBatch in the transaction that loads its data.
 */
export interface RunRow {
  id: string;
  orgId: string;
  command: string;
  args: unknown;
  status: 'running' | 'done' | 'failed' | 'interrupted';
  startedAt: Date;
  finishedAt: Date | null;
  summary: unknown;
}

export interface PlannedWindow {
  windowKey: string;
  uid: string | null;
  resource: string;
  /** YYYY-MM-DD */
  startDate: string;
  /** YYYY-MM-DD */
  endDate: string;
}

export interface LedgerWindow extends PlannedWindow {
  status: 'pending' | 'done';
  records: number;
  requests: number;
  completedAt: Date | null;
}

export interface LedgerSummary {
  windows: number;
  done: number;
  pending: number;
  records: number;
  requests: number;
}

type Db = Kysely<Database>;

/** The ledger key of one user × v2 resource × date window (one request of a records.poll job). */
export function recordsWindowKey(resource: string, uid: string, startDate: string, endDate: string): string {
  return `${resource}|${uid}|${startDate}|${endDate}`;
}

/** Which of `windowKeys` are still pending in the run's ledger. */
export async function pendingWindowKeys(
  db: Db,
  runId: string,
  windowKeys: readonly string[],
): Promise<Set<string>> {
  if (windowKeys.length === 0) return new Set();
  const rows = await db
    .selectFrom('validic_sync.backfill_windows')
    .select('window_key')
    .where('run_id', '=', runId)
    .where('window_key', 'in', windowKeys)
    .where('status', '=', 'pending')
    .execute();
  return new Set(rows.map((r) => r.window_key));
}

function toRun(r: {
  id: string;
  org_id: string;
  command: string;
  args: unknown;
  status: RunRow['status'];
  started_at: Date;
  finished_at: Date | null;
  summary: unknown;
}): RunRow {
  return {
    id: r.id,
    orgId: r.org_id,
    command: r.command,
    args: r.args,
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    summary: r.summary,
  };
}

/** A new run, held by `holder` (run-heartbeats.ts), its heartbeat starting now. */
export async function startRun(
  db: Db,
  input: { orgId: string; command: string; args: unknown; id?: string; holder?: string },
): Promise<RunRow> {
  const row = await db
    .insertInto('validic_sync.runs')
    .values({
      id: input.id ?? randomUUID(),
      org_id: input.orgId,
      command: input.command,
      args: JSON.stringify(input.args ?? {}),
      status: 'running',
      holder: input.holder ?? null,
      heartbeat_at: sql`now()`,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRun(row);
}

/** A resumed run (interrupted, failed or still running) is running again, held by `holder` from now. */
export async function claimRun(db: Db, runId: string, holder: string): Promise<void> {
  await db
    .updateTable('validic_sync.runs')
    .set({ status: 'running', holder, heartbeat_at: sql`now()`, finished_at: null })
    .where('id', '=', runId)
    .where('status', '<>', 'done')
    .execute();
}

export async function finishRun(
  db: Db,
  runId: string,
  status: 'done' | 'failed',
  summary?: unknown,
): Promise<void> {
  await db
    .updateTable('validic_sync.runs')
    .set({ status, finished_at: sql`now()`, summary: summary === undefined ? null : JSON.stringify(summary) })
    .where('id', '=', runId)
    .execute();
}

/**
 * The newest run of `command` for the org that did not finish (running or failed) and has the same
 * args, so `backfill` with the same range resumes it instead of starting over.
 */
export async function findUnfinishedRun(
  db: Db,
  input: { orgId: string; command: string; args?: unknown },
): Promise<RunRow | undefined> {
  let query = db
    .selectFrom('validic_sync.runs')
    .selectAll()
    .where('org_id', '=', input.orgId)
    .where('command', '=', input.command)
    .where('status', '<>', 'done')
    .orderBy('started_at', 'desc')
    .limit(1);
  if (input.args !== undefined)
    query = query.where(sql<boolean>`args = ${JSON.stringify(input.args)}::jsonb`);
  const row = await query.executeTakeFirst();
  return row ? toRun(row) : undefined;
}

/** Adds the windows to the run's ledger; windows already planned (same key) are left as they are. */
export async function planWindows(
  db: Db,
  runId: string,
  orgId: string,
  windows: readonly PlannedWindow[],
): Promise<void> {
  for (let i = 0; i < windows.length; i += 1000) {
    const chunk = windows.slice(i, i + 1000);
    if (chunk.length === 0) continue;
    await db
      .insertInto('validic_sync.backfill_windows')
      .values(
        chunk.map((w) => ({
          run_id: runId,
          window_key: w.windowKey,
          org_id: orgId,
          uid: w.uid,
          resource: w.resource,
          start_date: w.startDate,
          end_date: w.endDate,
        })),
      )
      .onConflict((oc) => oc.columns(['run_id', 'window_key']).doNothing())
      .execute();
  }
}

function toWindow(r: {
  window_key: string;
  uid: string | null;
  resource: string;
  start_date: string;
  end_date: string;
  status: 'pending' | 'done';
  records: number;
  requests: number;
  completed_at: Date | null;
}): LedgerWindow {
  return {
    windowKey: r.window_key,
    uid: r.uid,
    resource: r.resource,
    startDate: r.start_date,
    endDate: r.end_date,
    status: r.status,
    records: r.records,
    requests: r.requests,
    completedAt: r.completed_at,
  };
}

export async function listPendingWindows(db: Db, runId: string): Promise<LedgerWindow[]> {
  const rows = await db
    .selectFrom('validic_sync.backfill_windows')
    .selectAll()
    .where('run_id', '=', runId)
    .where('status', '=', 'pending')
    .orderBy('start_date')
    .orderBy('resource')
    .orderBy('uid')
    .orderBy('window_key')
    .execute();
  return rows.map(toWindow);
}

export async function listWindows(db: Db, runId: string): Promise<LedgerWindow[]> {
  const rows = await db
    .selectFrom('validic_sync.backfill_windows')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('window_key')
    .execute();
  return rows.map(toWindow);
}

/**
 * A run's ledger in sums: read from `validic_sync.backfill_progress` (migration 0041: at most 16 rows per
 * run, kept by triggers on the windows in the same transaction), so it costs the same at a thousand
 * windows as at a million.
 */
export async function summarizeLedger(db: Db, runId: string): Promise<LedgerSummary> {
  const row = await db
    .selectFrom('validic_sync.backfill_progress')
    .select([
      sql<number>`coalesce(sum(windows), 0)::float8`.as('windows'),
      sql<number>`coalesce(sum(done), 0)::float8`.as('done'),
      sql<number>`coalesce(sum(records), 0)::float8`.as('records'),
      sql<number>`coalesce(sum(requests), 0)::float8`.as('requests'),
    ])
    .where('run_id', '=', runId)
    .executeTakeFirstOrThrow();
  return { ...row, pending: row.windows - row.done };
}

/** Per resource: windows done / total, records and requests so far (for progress and `status`). */
export async function summarizeLedgerByResource(
  db: Db,
  runId: string,
): Promise<Record<string, LedgerSummary>> {
  const rows = await db
    .selectFrom('validic_sync.backfill_windows')
    .select([
      'resource',
      sql<number>`count(*)::int`.as('windows'),
      sql<number>`count(*) filter (where status = 'done')::int`.as('done'),
      sql<number>`coalesce(sum(records), 0)::int`.as('records'),
      sql<number>`coalesce(sum(requests), 0)::int`.as('requests'),
    ])
    .where('run_id', '=', runId)
    .groupBy('resource')
    .execute();
  return Object.fromEntries(
    rows.map(({ resource, ...s }) => [resource, { ...s, pending: s.windows - s.done }]),
  );
}

/**
 * Marks a backfill run done once its ledger has no pending window. Called after every window commit,
 * so a run finishes the same way whether its windows ran inline or on a fleet of BullMQ workers.
 */
export async function finishRunIfComplete(db: Kysely<Database>, runId: string): Promise<boolean> {
  const result = await db
    .updateTable('validic_sync.runs')
    .set({ status: 'done', finished_at: sql`now()` })
    .where('id', '=', runId)
    .where('status', '=', 'running')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('validic_sync.backfill_windows')
            .select(sql`1`.as('one'))
            .where('run_id', '=', runId)
            .where('status', '=', 'pending'),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
