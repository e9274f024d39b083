/**
 * A stored push notification processed: its items routed to fetches, stored in parts; and the gate
 * that lets push.drain queue only within push's share of the budget.
 */
import type { Kysely, Transaction } from 'kysely';
import { toError } from '../errors/index.ts';
import type { Database } from '../warehouse/database.ts';
import { storePushFetches } from '../warehouse/push-fetch-store.ts';
import {
  listUnprocessedPushes,
  lockPushProgress,
  markPushNotification,
  markPushPartStored,
  type PushNotificationStatus,
  storePushNotification,
} from '../warehouse/push-notification-store.ts';
import type { ResolvePushOrg } from './push-admission.ts';
import { extractPushItems, type PushFetchTiming, type PushItem, pushFetchOfItem } from './push-items.ts';

/**
 * A stored notification's items → the durable queue of fetches (validic_sync.push_fetches), in parts of
 * `push.maxItems` items, each part one transaction with the notification's progress
 * (`items_processed`); and the resumption of a notification whose processing was cut off.
 *
 * A notification's items become pending fetches in parts of `push.maxItems`: each part stores its fetches
 * and the notification's progress (`items_processed`, `enqueued`) in one transaction, under a lock on the
 * notification's row, so a resumption and a slow first attempt never store a part twice.
 * `receivePushNotification` puts the body, the first part and, when that was all, the outcome in ONE
 * transaction: the usual notification costs one commit, the price that bounds how many a worker takes a
 * minute. If that transaction fails, the body is stored alone (`received`) and the failure returned, so
 * the body is never lost while the database answers. `resumePushNotifications` (run by push.drain)
 * finishes notifications still `received` two minutes after arrival: those its org signed, and those
 * whose org was not told at arrival (shared secret), routed again item by item. One whose items still
 * cannot be stored a day later is marked `failed` with the reason (its body stays), so it is not retried
 * forever.
 */
export const DEFAULT_PUSH_PART_ITEMS = 500;

/** A notification whose items still cannot be stored this long after its first resumption fails. */
const GIVE_UP_RESUMING_AFTER_MS = 86_400_000;

export interface ProcessPushOptions extends PushFetchTiming {
  /** Items stored per transaction (`push.maxItems`). */
  partItems: number;
}

export interface RoutedPushItem {
  item: PushItem;
  /** The configured organization it belongs to; undefined when it cannot be told. */
  orgId: string | undefined;
}

export interface ProcessedPush {
  status: Exclude<PushNotificationStatus, 'received'>;
  /** Items stored as pending fetches. */
  stored: number;
  /** Organizations that got fetches (their drains are worth a kick). */
  orgs: string[];
  error: string | null;
  /** The one organization of the notification, if one. */
  orgId: string | null;
}

/** Routes each item: the signature's org for all, else the org the item names (or the only one). */
export function routePushItems(
  items: readonly PushItem[],
  signedBy: string | undefined,
  resolveOrg: ResolvePushOrg,
): { routed: RoutedPushItem[]; problems: string[] } {
  const problems: string[] = [];
  const routed = items.map((item) => {
    const orgId = signedBy ?? resolveOrg(item.organizationId);
    if (!orgId) {
      problems.push(
        item.organizationId
          ? `organization ${item.organizationId} is not configured`
          : 'the item names no organization and several are configured',
      );
    }
    return { item, orgId };
  });
  return { routed, problems };
}

/** Stores items [from, from + part) and the notification's new progress, in the caller's transaction. */
async function storePart(
  trx: Transaction<Database>,
  id: number,
  routed: readonly RoutedPushItem[],
  from: number,
  options: ProcessPushOptions,
): Promise<number> {
  const to = Math.min(routed.length, from + Math.max(1, options.partItems));
  const slice = routed.slice(from, to).flatMap((r) => (r.orgId ? [{ item: r.item, orgId: r.orgId }] : []));
  await storePushFetches(
    trx,
    slice.map((r) => pushFetchOfItem(r.item, r.orgId, options)),
    { now: options.now, notificationId: id },
  );
  await markPushPartStored(trx, id, to, slice.length);
  return to;
}

/**
 * Stores the routed items of notification `id` from where its progress says, a part per transaction:
 * the part's fetches and the new progress commit together, under a lock on the notification's row, so
 * a resumption and a slow first attempt never store one part twice. Returns the items stored by all
 * parts so far (this call's and earlier ones').
 */
export async function storePushItemsInParts(
  db: Kysely<Database>,
  id: number,
  routed: readonly RoutedPushItem[],
  options: ProcessPushOptions,
): Promise<number> {
  for (;;) {
    const done = await db.transaction().execute(async (trx) => {
      const from = (await lockPushProgress(trx, id)) ?? routed.length;
      if (from >= routed.length) return true;
      return (await storePart(trx, id, routed, from, options)) >= routed.length;
    });
    if (done) break;
  }
  return routed.filter((r) => r.orgId).length;
}

interface PushInterpretation {
  routed: readonly RoutedPushItem[];
  problems: readonly string[];
  signedBy: string | undefined;
}

/** Marks the notification with what came of it (every part stored). */
async function markOutcome(
  db: Kysely<Database>,
  id: number,
  input: PushInterpretation,
): Promise<ProcessedPush> {
  const stored = input.routed.filter((r) => r.orgId).length;
  const orgs = [...new Set(input.routed.flatMap((r) => (r.orgId ? [r.orgId] : [])))];
  const status: ProcessedPush['status'] =
    stored === 0 ? 'unrecognized' : input.problems.length > 0 ? 'partial' : 'queued';
  const error = input.problems.join('; ') || null;
  const orgId = input.signedBy ?? (orgs.length === 1 ? orgs[0]! : null);
  await markPushNotification(db, id, { status, orgId, items: input.routed.length, enqueued: stored, error });
  return { status, stored, orgs, error, orgId };
}

/** Stores the items in parts, then marks the notification with what came of it (the resumption). */
export async function processPushNotification(
  db: Kysely<Database>,
  id: number,
  input: PushInterpretation,
  options: ProcessPushOptions,
): Promise<ProcessedPush> {
  await storePushItemsInParts(db, id, input.routed, options);
  return markOutcome(db, id, input);
}

export interface ReceivedPush {
  id: number;
  /** Absent when processing failed after the body was stored (`error`): push.drain resumes it. */
  processed?: ProcessedPush;
  error?: unknown;
}

/**
 * A notification as the endpoint receives it: the body, its first part of items and (when that was all
 * of them) its outcome in ONE transaction, so the usual notification costs one commit; further parts in
 * their own transactions. Should that transaction fail, the body is stored alone (status `received`, to
 * be resumed) and the failure returned; only when even that fails does this throw (the caller answers
 * 503).
 */
export async function receivePushNotification(
  db: Kysely<Database>,
  body: { raw: string; parsed: unknown; contentType: string | undefined; orgId: string | null },
  input: PushInterpretation,
  options: ProcessPushOptions,
): Promise<ReceivedPush> {
  let id: number;
  let processed: ProcessedPush | undefined;
  try {
    [id, processed] = await db.transaction().execute(async (trx) => {
      const stored = await storePushNotification(trx, body);
      const to = await storePart(trx, stored, input.routed, 0, options);
      return [stored, to >= input.routed.length ? await markOutcome(trx, stored, input) : undefined] as const;
    });
  } catch (error) {
    return { id: await storePushNotification(db, body), error };
  }
  if (processed) return { id, processed };
  try {
    return { id, processed: await processPushNotification(db, id, input, options) };
  } catch (error) {
    return { id, error };
  }
}

export interface ResumedPush {
  id: number;
  result?: ProcessedPush;
  error?: string;
}

/**
 * Finishes notifications stored but not processed to the end (`received`: the process died or the
 * database failed between the body and its last part) and received before `olderThan` (so a request
 * still at work is left alone): those of `orgId` (signed by it) and those whose org was not told at
 * arrival (a shared-secret push), whose items are routed again by `resolveOrg`.
 */
export async function resumePushNotifications(
  db: Kysely<Database>,
  input: {
    orgId: string;
    olderThan: Date;
    resolveOrg: ResolvePushOrg;
    limit?: number;
    options: ProcessPushOptions;
  },
): Promise<ResumedPush[]> {
  const rows = await listUnprocessedPushes(db, {
    orgId: input.orgId,
    olderThan: input.olderThan,
    limit: input.limit ?? 100,
  });
  const out: ResumedPush[] = [];
  for (const row of rows) {
    let body: unknown = row.parsed;
    let parseError: string | undefined;
    if (body === null) {
      try {
        body = JSON.parse(row.raw);
      } catch (error) {
        parseError = `body is not JSON: ${toError(error).message}`;
      }
    }
    const extracted =
      parseError === undefined ? extractPushItems(body) : { items: [], problems: [parseError], listed: 0 };
    const signedBy = row.org_id ?? undefined;
    const { routed, problems } = routePushItems(extracted.items, signedBy, input.resolveOrg);
    try {
      const result = await processPushNotification(
        db,
        Number(row.id),
        { routed, problems: [...extracted.problems, ...problems], signedBy },
        input.options,
      );
      out.push({ id: Number(row.id), result });
    } catch (error) {
      const message = toError(error).message;
      out.push({ id: Number(row.id), error: message });
      // Tried on every drain for a day (an outage passes); then kept as failed, with the reason, so a
      // body that cannot be processed is not retried forever. The body itself stays stored.
      if (new Date(row.received_at).getTime() < input.olderThan.getTime() - GIVE_UP_RESUMING_AFTER_MS) {
        await markPushNotification(db, Number(row.id), {
          status: 'failed',
          orgId: row.org_id,
          items: routed.length,
          enqueued: 0,
          error: `its items could not be stored: ${message}`,
        }).catch(() => {});
      }
    }
  }
  return out;
}

/**
 * How many push fetches one drain may claim now (pure): push's share of the request budget, spread
 * evenly.
 *
 * How many fetches a drain may claim (pure). The hour is cut into k whole windows (k = six for the
 * default ten ticks, fewer when the cap is under six an hour) of ⌊cap ÷ k⌋ requests each; the gate counts
 * claims over the sliding window, so any window, and therefore any hour (k consecutive windows), holds no
 * more than the cap. Per drain it allows what the rate permits since the last claim (at most two ticks'
 * worth: a quiet spell does not release a window's worth at once ahead of the recent poll), and no more
 * in flight than a window. Property-tested in `test/unit/push-drain-gate.test.ts`.
 */
const HOUR_MS = 3_600_000;

export interface PushDrainWindow {
  /** Length of the sliding window the gate counts over (ms): an hour divided into whole windows. */
  windowMs: number;
  /** Requests the window may hold; windows per hour × this ≤ the hourly cap. */
  perWindow: number;
}

/**
 * The window for a cap of `capPerHour`: `preferredMs` (e.g. ten ticks) rounded so a whole number k of
 * windows makes an hour, with k ≤ the cap (a cap of 3 an hour gets 20-minute windows of one), and
 * ⌊cap ÷ k⌋ requests each. Any hour is covered by k consecutive windows, so no hour holds more than
 * k·⌊cap ÷ k⌋ ≤ cap requests.
 */
export function pushDrainWindow(capPerHour: number, preferredMs: number): PushDrainWindow {
  const cap = Math.max(0, Math.floor(capPerHour));
  const preferred = Math.max(1, Math.round(HOUR_MS / Math.max(1, preferredMs)));
  const k = Math.max(1, Math.min(preferred, cap));
  return { windowMs: HOUR_MS / k, perWindow: Math.floor(cap / k) };
}

export interface PushDrainAllowanceInput {
  window: PushDrainWindow;
  /** The drain tick (`budget.tickSeconds` in ms): the first drain may take a tick's worth. */
  tickMs: number;
  /** Requests of fetches claimed within the window (finished ones count their pages). */
  claimedInWindow: number;
  /** Fetches queued and not finished. */
  inFlight: number;
  lastClaimAt: number | null;
  now: number;
}

/**
 * At most what the window still holds, no more in flight than a window's worth, and no more than the
 * rate allows since the last claim (so a window's worth is not spent in one burst ahead of the other
 * kinds of work: a drain after a quiet spell takes at most two ticks' worth).
 */
export function pushDrainAllowance(input: PushDrainAllowanceInput): number {
  const { window, tickMs, now } = input;
  if (window.perWindow <= 0) return 0;
  const since =
    input.lastClaimAt === null ? tickMs : Math.min(2 * tickMs, Math.max(0, now - input.lastClaimAt));
  const byRate = Math.ceil((window.perWindow * since) / window.windowMs);
  return Math.max(
    0,
    Math.min(byRate, window.perWindow - input.claimedInWindow, window.perWindow - input.inFlight),
  );
}
