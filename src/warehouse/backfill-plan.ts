/**
 * What a backfill run is and what it will fetch: its identity (the arguments that resume it), its
 * ledger windows (one per user × resource × ≤ 30-day window, one per 30 days of connection events), and
 * how many of them are left, counted without writing anything. `records.backfill` plans with the first
 * two; the `backfill` command estimates with the last before it starts.
 */
import type { Kysely } from 'kysely';
import {
  CONNECTION_EVENTS_SINCE,
  planDateWindows,
  planRecordWindows,
  toV2Resource,
  V2_RESOURCES,
} from '../validic/platform-limits.ts';
import type { Database } from './database.ts';
import { listPollableUids } from './recent-polls.ts';
import { findUnfinishedRun, type PlannedWindow, recordsWindowKey, summarizeLedger } from './window-ledger.ts';

/** A backfill run's identity in `validic_sync.runs.args`: the same arguments resume the same run. */
export interface BackfillRunArgs {
  from: string;
  to: string;
  resources: string[];
  uids: string[] | null;
  connections: boolean;
}

export function backfillRunArgs(input: {
  from: string;
  to: string;
  /** Resource names as given (aliases allowed). */
  resources: readonly string[];
  uids?: readonly string[] | undefined;
  connections: boolean;
}): BackfillRunArgs {
  return {
    from: input.from,
    to: input.to,
    resources: [...new Set(input.resources.map(toV2Resource))].sort(
      (a, b) => V2_RESOURCES.indexOf(a) - V2_RESOURCES.indexOf(b),
    ),
    uids: input.uids ? [...new Set(input.uids)].sort() : null,
    connections: input.connections,
  };
}

/** The connection-event windows of a run: 30 days each, from the day the platform keeps them. */
function connectionWindows(args: BackfillRunArgs) {
  if (!args.connections || args.to < CONNECTION_EVENTS_SINCE) return [];
  // biome-ignore lint/complexity/useMathMinMax: ISO date strings compare as text, Math.max would not.
  const from = args.from < CONNECTION_EVENTS_SINCE ? CONNECTION_EVENTS_SINCE : args.from;
  return planDateWindows(from, args.to);
}

/** Every ledger window of a run over these users. */
export function planBackfillWindows(args: BackfillRunArgs, uids: readonly string[]): PlannedWindow[] {
  const planned: PlannedWindow[] = [];
  // One day more at each edge: the platform may window by the user's local date (platform-limits.ts).
  for (const window of planRecordWindows(args.from, args.to)) {
    for (const resource of args.resources) {
      for (const uid of uids) {
        planned.push({
          windowKey: recordsWindowKey(resource, uid, window.startDate, window.endDate),
          uid,
          resource,
          startDate: window.startDate,
          endDate: window.endDate,
        });
      }
    }
  }
  for (const window of connectionWindows(args)) {
    planned.push({
      windowKey: `connections|${window.startDate}|${window.endDate}`,
      uid: null,
      resource: 'connections',
      startDate: window.startDate,
      endDate: window.endDate,
    });
  }
  return planned;
}

/** How many windows `planBackfillWindows` plans for `users` users, without listing them. */
export function countBackfillWindows(args: BackfillRunArgs, users: number): number {
  return (
    planRecordWindows(args.from, args.to).length * args.resources.length * users +
    connectionWindows(args).length
  );
}

export interface BackfillEstimate {
  /** Users the run would poll (pollable, and among `uids` when given). */
  users: number;
  /** The run's ledger windows. */
  windows: number;
  /** Windows an unfinished run with the same arguments has done, which a resume skips. */
  done: number;
}

/** The windows a backfill with these arguments would fetch over the users the warehouse knows now. */
export async function estimateBackfill(
  db: Kysely<Database>,
  input: { orgId: string; args: BackfillRunArgs; restart: boolean },
): Promise<BackfillEstimate> {
  const users = (await listPollableUids(db, input.orgId, input.args.uids ?? undefined)).length;
  const windows = countBackfillWindows(input.args, users);
  const previous = input.restart
    ? undefined
    : await findUnfinishedRun(db, { orgId: input.orgId, command: 'backfill', args: input.args });
  const done = previous ? (await summarizeLedger(db, previous.id)).done : 0;
  return { users, windows, done: Math.min(done, windows) };
}
