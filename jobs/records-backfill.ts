/**
 * records.backfill: plans a backfill run and fans out. It syncs the user list, plans one ledger window
 * per user × resource × ≤ 30-day window (and one per 30 days of connection events), and enqueues the
 * windows still pending. Running the same backfill again resumes the unfinished run with the same
 * arguments (only pending windows are fetched); a finished run is not resumed: the same command then
 * starts a new run, because fetching the range again is what the user asked for.
 */

import { z } from 'zod';
import { classifyFailure } from '../src/errors/index.ts';
import { isoDate, isoInstant, jobKey } from '../src/queue/job-definition.ts';
import { planRecordWindows } from '../src/validic/platform-limits.ts';
import { backfillRunArgs, planBackfillWindows } from '../src/warehouse/backfill-plan.ts';
import { defineJob, type JobContext } from './job-context.ts';
import { syncUsers } from './users-sync.ts';

/** The payload: what one run of this job is given. */
export const recordsBackfillPayload = z
  .object({
    orgId: z.string().min(1),
    from: isoDate,
    to: isoDate,
    /** v2 resource names; default: the org's configured resources. */
    resources: z.array(z.string().min(1)).optional(),
    /** Limit to these uids; default: every user of the org. */
    uids: z.array(z.string().min(1)).optional(),
    /** Start a new run even if an unfinished one with the same arguments exists. */
    restart: z.boolean().default(false),
    /** Also fetch connection events for the range. */
    connections: z.boolean().default(true),
    /**
     * The stream gap (validic_sync.stream_gaps) this backfill fills, when no stream can re-deliver it:
     * it keys the job, so a gap gets one backfill however often it is reported.
     */
    gapId: z.number().int().positive().optional(),
    /** Queue the newest windows first (the history of users new to the listing: oldest last). */
    newestFirst: z.boolean().default(false),
    /** List the users first (false: the caller has just listed them, as users.sync has). */
    listUsers: z.boolean().default(true),
    /**
     * Users new since this full listing (ISO instant) that this backfill brings the history of: with
     * the uids, its job id, so a retried users.sync queues it once.
     */
    newUsersSince: isoInstant.optional(),
  })
  .refine((p) => p.from <= p.to, { message: 'from must not be after to', path: ['from'] });

export interface RecordsBackfillResult {
  runId: string;
  resumed: boolean;
  users: number;
  windows: number;
  alreadyDone: number;
  enqueued: number;
  unknownUids: string[];
}

export const recordsBackfill = defineJob({
  name: 'records.backfill',
  payload: recordsBackfillPayload,
  // One backfill per stream gap, one per batch of users new since a listing; a backfill asked for by a
  // person is never deduplicated.
  jobId: (p) =>
    p.gapId !== undefined
      ? jobKey('records.backfill', p.orgId, 'gap', String(p.gapId))
      : p.newUsersSince !== undefined
        ? jobKey('records.backfill', p.orgId, 'new-users', p.newUsersSince, p.uids?.[0])
        : undefined,
  async run(ctx, payload): Promise<RecordsBackfillResult> {
    const { orgId } = payload;
    const store = ctx.warehouse;
    const org = ctx.org(orgId);
    // The run's identity: the same arguments resume the same run.
    const args = backfillRunArgs({ ...payload, resources: payload.resources ?? org.resources });
    const { resources } = args;

    const previous = await store.findUnfinishedRun({ orgId, command: 'backfill', args });
    if (previous && payload.restart)
      await store.finishRun(previous.id, 'failed', { supersededBy: 'restart' });
    const resumed = previous !== undefined && !payload.restart;
    // The run is this process's (or the worker fleet's) from now: its heartbeat says it is alive.
    if (resumed) await store.claimRun(previous.id, ctx.runHolder);
    const run = resumed
      ? previous
      : await store.startRun({ orgId, command: 'backfill', args, holder: ctx.runHolder });

    // A complete listing first: it also marks the users gone from the platform removed.
    if (payload.listUsers) await syncUsers(ctx, orgId);
    const uids = await store.listPollableUids(orgId, args.uids ?? undefined);
    const known = new Set(uids);
    const unknownUids = (args.uids ?? []).filter((uid) => !known.has(uid));
    if (unknownUids.length > 0) {
      ctx.log.warn(
        { unknownUids },
        'these uids are not (or no longer) users of the organization and are skipped',
      );
    }

    const planned = planBackfillWindows(args, uids);
    await store.planWindows(run.id, orgId, planned);
    // The months of the record windows (one day more at each edge, as planned), not of connection events.
    await createRunMonths(ctx, planRecordWindows(args.from, args.to));

    const pending = await store.listPendingWindows(run.id);
    // One records.poll per user × date window, for all its pending resources (see records-poll.ts).
    const polls = new Map<string, { uid: string; startDate: string; endDate: string; resources: string[] }>();
    let enqueued = 0;
    for (const window of pending) {
      const common = { orgId, runId: run.id, startDate: window.startDate, endDate: window.endDate };
      if (window.resource === 'connections') {
        if (await ctx.enqueue('connections.reconcile', { ...common, windowKey: window.windowKey }))
          enqueued++;
        continue;
      }
      const key = `${window.uid}|${window.startDate}|${window.endDate}`;
      let poll = polls.get(key);
      if (!poll) {
        poll = { uid: window.uid!, startDate: window.startDate, endDate: window.endDate, resources: [] };
        polls.set(key, poll);
      }
      poll.resources.push(window.resource);
    }
    // Oldest last when asked (a new user's history: the recent months matter first).
    for (const poll of payload.newestFirst ? [...polls.values()].reverse() : polls.values()) {
      // The configured order of resources, whatever order the ledger listed them in.
      const order: readonly string[] = resources;
      poll.resources.sort((a, b) => order.indexOf(a) - order.indexOf(b));
      if (await ctx.enqueue('records.poll', { orgId, runId: run.id, ...poll })) enqueued++;
    }
    await store.finishRunIfComplete(run.id);
    ctx.log.info(
      { runId: run.id, resumed, windows: planned.length, pending: pending.length },
      resumed ? 'resuming backfill run' : 'planned backfill run',
    );
    return {
      runId: run.id,
      resumed,
      users: uids.length,
      windows: planned.length,
      alreadyDone: planned.length - pending.length,
      enqueued,
      unknownUids,
    };
  },
});

/**
 * How long the plan tries to create its months (src/warehouse/loader/month-partitions.ts) before it goes
 * on without them, ms: a long read of validic.records keeps a month from being created, and the plan must
 * not wait for it; its loads then create their month themselves, each waiting only for its own.
 */
const MONTH_CREATION_PATIENCE_MS = 5_000;

/**
 * The months of the run's windows, created now, once, so that its loads find them and never create one
 * (the edges' extra day included: a record's start_time in UTC lies within its window's dates).
 */
async function createRunMonths(ctx: JobContext, windows: readonly { startDate: string; endDate: string }[]) {
  const first = windows[0]?.startDate;
  const last = windows.at(-1)?.endDate;
  if (first === undefined || last === undefined) return;
  try {
    await ctx.warehouse.createMonthsBetween(first, last, {
      patienceMs: MONTH_CREATION_PATIENCE_MS,
      signal: ctx.signal,
    });
  } catch (error) {
    if (classifyFailure(error).kind !== 'conflict') throw error;
    ctx.log.warn(
      { first, last, err: error },
      'the months of this backfill could not be created now (a long read holds the default partitions); its loads will create them',
    );
  }
}

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'records.backfill': { payload: typeof recordsBackfillPayload; job: typeof recordsBackfill };
  }
}
