/**
 * The payload schema of every job, by name: what `enqueue(name, payload)` is typed by and validates
 * against (on enqueue and again on dequeue). Apart from the job modules so that define-job.ts (which
 * types `ctx.enqueue` by them) and the job modules (which import define-job.ts) form no cycle.
 */
import { z } from 'zod';
import { isoDate, isoInstant } from '../src/queue/payload-dates.ts';
import { LEGACY_OBJECTS } from '../src/validic/legacy-objects.ts';
import { MAX_REQUEST_WINDOW_DAYS } from '../src/validic/platform-limits.ts';

/** users.sync (jobs/users-sync.ts). */
export const usersSyncPayload = z.object({ orgId: z.string().min(1) });

/** records.poll (jobs/records-poll.ts). */
export const recordsPollPayload = z.preprocess(
  // Jobs queued by an earlier version carry one `resource` (and its `windowKey`, which was the same
  // recordsWindowKey): read them as a job of that one resource, so an upgrade mid-backfill loses none.
  (value) => {
    if (typeof value !== 'object' || value === null || 'resources' in value) return value;
    const { resource, windowKey: _windowKey, ...rest } = value as Record<string, unknown>;
    return resource === undefined ? value : { ...rest, resources: [resource] };
  },
  z.object({
    orgId: z.string().min(1),
    uid: z.string().min(1),
    /** v2 resource names, fetched in this order. */
    resources: z.array(z.string().min(1)).min(1),
    startDate: isoDate,
    endDate: isoDate,
    /** The backfill run whose ledger windows (recordsWindowKey of each resource) this poll completes. */
    runId: z.string().optional(),
    /** Queued by the records.recent tick: its completion is written to validic_sync.recent_polls. */
    recent: z.boolean().optional(),
  }),
);

/** streams.reconcile (jobs/streams-reconcile.ts). */
export const streamsReconcilePayload = z.object({
  orgId: z.string().min(1),
  /** What asked for the pass: its schedule, a gap of the primary stream (brought forward), or `reconcile`. */
  trigger: z.enum(['schedule', 'gap', 'command']).default('schedule'),
});

/** records.backfill (jobs/records-backfill.ts). */
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

/** connections.reconcile (jobs/connections-reconcile.ts). */
export const connectionsReconcilePayload = z.object({
  orgId: z.string().min(1),
  startDate: isoDate,
  endDate: isoDate,
  runId: z.string().optional(),
  windowKey: z.string().optional(),
});

/** connections.recent (jobs/connections-recent.ts). */
export const connectionsRecentPayload = z.object({
  orgId: z.string().min(1),
  days: z.number().int().min(1).max(MAX_REQUEST_WINDOW_DAYS).optional(),
});

/** records.recent (jobs/records-recent.ts). */
export const recordsRecentPayload = z.object({
  orgId: z.string().min(1),
  /** Days back from today; default: what the recent poll's mode asks for (src/budget/recent-poll-mode.ts). */
  lookbackDays: z.number().int().min(0).max(MAX_REQUEST_WINDOW_DAYS).optional(),
});

/** legacy.sync (jobs/legacy-sync.ts). */
export const legacySyncPayload = z
  .object({
    orgId: z.string().min(1),
    /** Legacy objects; default: the org's `legacy.objects`. */
    objects: z.array(z.enum(LEGACY_OBJECTS)).min(1).optional(),
    /** Backfill range start; absent: continue from each object's cursor. */
    from: isoInstant.optional(),
    /** Range end; default: now. */
    to: isoInstant.optional(),
  })
  .refine((p) => !p.from || !p.to || Date.parse(p.from) < Date.parse(p.to), {
    message: 'from must be before to',
    path: ['from'],
  });

/** legacy.latest (jobs/legacy-latest.ts). */
export const legacyLatestPayload = z
  .object({
    orgId: z.string().min(1),
    object: z.enum(LEGACY_OBJECTS),
    startDate: isoInstant,
    endDate: isoInstant,
    /** End of the whole range: the next window (if any) is enqueued after this one commits. */
    until: isoInstant.optional(),
  })
  .refine((p) => Date.parse(p.startDate) < Date.parse(p.endDate), {
    message: 'startDate must be before endDate',
    path: ['startDate'],
  });
export type LegacyLatestPayload = z.infer<typeof legacyLatestPayload>;

/** legacy.fetch (jobs/legacy-fetch.ts). */
export const legacyFetchPayload = z.object({
  orgId: z.string().min(1),
  object: z.enum(LEGACY_OBJECTS),
  /** The record's `_id`. */
  recordId: z.string().min(1).optional(),
  /** The service user `_id` the record belongs to. */
  userId: z.string().min(1).optional(),
  /** The announced `last_updated` (ISO instant). */
  lastUpdated: isoInstant.optional(),
  /** Row of validic_sync.push_notifications that announced it (tells apart repeats without last_updated). */
  notificationId: z.string().optional(),
  /** The documented item's `activity_date` (ISO instant): the measurement set's timestamp. */
  activityDate: isoInstant.optional(),
  /** The documented item's `source` (the app's short name): filters the retrieval. */
  source: z.string().min(1).optional(),
  /** Coalescing window the announcement fell in (jobs queued before the durable push queue). */
  window: z.string().optional(),
  /**
   * The row of validic_sync.push_fetches this job carries out (queued by push.drain): marked done with
   * the requests it took, or failed with the reason.
   */
  fetchId: z.string().min(1).optional(),
  /** Earliest and latest announced `activity_date` (ISO instants): the user's object list around them. */
  activityFrom: isoInstant.optional(),
  activityTo: isoInstant.optional(),
  /** A latest window by `last_updated` (ISO instants), read exactly. */
  updatedFrom: isoInstant.optional(),
  updatedTo: isoInstant.optional(),
  /** Sources announced: the retrieval is filtered by one; several (or none) read every source. */
  sources: z.array(z.string().min(1)).optional(),
});
export type LegacyFetchPayload = z.infer<typeof legacyFetchPayload>;

/** One cell of the completeness audit (src/audit/sample-cells.ts). */
const auditCell = z.object({
  uid: z.string().min(1),
  resource: z.string().min(1),
  startDate: isoDate,
  endDate: isoDate,
  stratum: z.enum(['all', 'recent', 'history']),
});

/**
 * records.audit (jobs/records-audit.ts). With `auditId` and `cells`: audit those cells of that run.
 * Without: plan a run, a command's (`from`/`to`, `sample`, `uids`, `seed`) or, with none of them, a
 * scheduled tick's, and fan its cells out.
 */
export const recordsAuditPayload = z
  .object({
    orgId: z.string().min(1),
    auditId: z.number().int().positive().optional(),
    cells: z.array(auditCell).optional(),
    from: isoDate.optional(),
    to: isoDate.optional(),
    /** Share of the range's cells to draw, (0, 1]. */
    sample: z.number().gt(0).max(1).optional(),
    uids: z.array(z.string().min(1)).optional(),
    /** Seed of the random draw; default: a new one (the run's row keeps it). */
    seed: z.string().min(1).optional(),
    /** Load what is missing or stale (false: report only). */
    repair: z.boolean().default(true),
  })
  .refine((p) => (p.from === undefined) === (p.to === undefined), {
    message: 'give both from and to, or neither',
    path: ['from'],
  })
  .refine((p) => !p.from || !p.to || p.from <= p.to, { message: 'from must not be after to', path: ['from'] })
  .refine((p) => (p.auditId === undefined) === (p.cells === undefined), {
    message: 'cells belong to an audit run: give auditId and cells together',
    path: ['cells'],
  });

/** push.drain (jobs/push-drain.ts). */
export const pushDrainPayload = z.object({
  orgId: z.string().min(1),
  /** A kick: the instant the items it was queued for fall due (part of its job id); absent on the tick. */
  due: isoInstant.optional(),
});

/** push.prune (jobs/push-prune.ts). */
export const pushPrunePayload = z.object({});

/** warehouse.maintain (jobs/warehouse-maintain.ts). */
export const warehouseMaintainPayload = z.object({});

/** Job name → payload schema; jobs/index.ts checks that the catalog names the same jobs. */
export const jobPayloads = {
  'users.sync': usersSyncPayload,
  'records.poll': recordsPollPayload,
  'records.backfill': recordsBackfillPayload,
  'streams.reconcile': streamsReconcilePayload,
  'connections.reconcile': connectionsReconcilePayload,
  'connections.recent': connectionsRecentPayload,
  'records.recent': recordsRecentPayload,
  'legacy.sync': legacySyncPayload,
  'legacy.latest': legacyLatestPayload,
  'legacy.fetch': legacyFetchPayload,
  'records.audit': recordsAuditPayload,
  'push.drain': pushDrainPayload,
  'push.prune': pushPrunePayload,
  'warehouse.maintain': warehouseMaintainPayload,
};

// A type alias of an object type, not an interface: it must fit PayloadSchemas' index signature.
export type JobPayloads = typeof jobPayloads;
