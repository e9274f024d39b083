/**
 * The durable queue of push fetches in the warehouse (validic_sync.push_fetches, migration 0013): what a
 * push item asks for, merged per key, claimed within push's allowance, finished or failed, and pruned;
 * and the minutes of refusals (validic_sync.push_refusals).
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import type { LegacyObject } from '../validic/platform-limits.ts';
import type { Database } from './database.ts';
import { deleteInBatches } from './push-notification-store.ts';

/**
 * `validic_sync.push_fetches` (migration 0013), the durable queue of push-triggered fetches: store
 * (merging into the pending row of the same key), claim within an allowance, finish, fail, count, prune.

 * `validic_sync.push_fetches`, the durable queue: one statement stores a part's fetches (merged per key
 * first: PostgreSQL refuses to update one row twice in a statement) with `insert … on conflict … where
 * state = 'pending' do update`, the pending row of a key absorbing the new items. `claimPushFetches`
 * counts the requests claimed in the gate's window, the fetches in flight and the last claim, asks the
 * allowance, and claims in the same transaction under a per-org advisory lock (two drains never spend one
 * window twice): lost fetches first (queued more than an hour), then refused-minute windows, then the
 * rest by due time, as many as their planned requests fit in the allowance. A fetch counts as its
 * planned requests (`planned_requests`, migration 0025: an activity fetch one per 30 days of its range
 * and margins, others one) until it finishes, then as the pages it took. `readPushBacklog` is what the
 * planner, `status` and `/metrics` show.
 */
export type PushFetchMode = 'activity' | 'updated' | 'record' | 'refused';

/**
 * Keys of refusals whose org could not be told (validic_sync.push_refusals.org_id): a connection the
 * push listener refused or cut, and a shared-secret push with several orgs configured. Every org's
 * backlog counts them.
 */
export const LISTENER_REFUSAL_KEY = '(listener)';
export const SHARED_SECRET_REFUSAL_KEY = '(shared secret)';

/** One pending fetch to store (or to merge into the pending row of the same key). */
export interface PushFetchInput {
  orgId: string;
  object: LegacyObject;
  mode: PushFetchMode;
  /** Service user `_id`; '' for an org-level read. */
  userId: string;
  /** Mode `record`: the record `_id`; '' otherwise. */
  recordId: string;
  /**
   * Modes `updated` and `refused`: the UTC hour of the window (`2026-03-15T12`); mode `activity`: the
   * first UTC date of its 28-day window of activity dates (src/push/push-items.ts); '' otherwise.
   */
  bucket: string;
  /** ISO instants; null for a record, or for a latest window that is "the last legacyWindowHours". */
  rangeStart: string | null;
  rangeEnd: string | null;
  /** Sources announced; null: any source. */
  sources: string[] | null;
  /** Items (or refused minutes) merged into it. */
  items: number;
  /** ISO instant: not claimed before this. */
  dueAt: string;
}

export const pushFetchKey = (f: PushFetchInput) =>
  [f.orgId, f.object, f.mode, f.userId, f.recordId, f.bucket].join('\u0001');

/** null (any source) absorbs every source; otherwise the union, sorted. */
export function mergeSources(a: string[] | null, b: string[] | null): string[] | null {
  if (a === null || b === null) return null;
  return [...new Set([...a, ...b])].sort();
}

const least = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : a < b ? a : b);
const greatest = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : a > b ? a : b);

/**
 * Merges `b` into `a` (same key) the way the store's upsert merges a new item into the pending row: the
 * range widens, sources unite, items add up; due is the earlier of the two, except that a refused-minute
 * window waits for its latest minute to end.
 */
export function mergePushFetch(a: PushFetchInput, b: PushFetchInput): PushFetchInput {
  return {
    ...a,
    rangeStart: least(a.rangeStart, b.rangeStart),
    rangeEnd: greatest(a.rangeEnd, b.rangeEnd),
    sources: mergeSources(a.sources, b.sources),
    items: a.items + b.items,
    dueAt: a.mode === 'refused' ? greatest(a.dueAt, b.dueAt)! : least(a.dueAt, b.dueAt)!,
  };
}

/** One fetch per key: what one statement may upsert (PostgreSQL refuses to update a row twice in one). */
export function coalescePushFetches(fetches: readonly PushFetchInput[]): PushFetchInput[] {
  const byKey = new Map<string, PushFetchInput>();
  for (const f of fetches) {
    const key = pushFetchKey(f);
    const seen = byKey.get(key);
    byKey.set(key, seen ? mergePushFetch(seen, f) : f);
  }
  return [...byKey.values()];
}

type Executor = Kysely<Database> | Transaction<Database>;

/**
 * Upserts the fetches (merged per key first): a new row per key, or the pending row of that key
 * absorbs them (wider range, more sources, more items). Returns the rows written.
 */
export async function storePushFetches(
  db: Executor,
  fetches: readonly PushFetchInput[],
  options: { now: number; notificationId?: number },
): Promise<number> {
  const rows = coalescePushFetches(fetches).map((f) => ({
    org_id: f.orgId,
    object: f.object,
    mode: f.mode,
    user_id: f.userId,
    record_id: f.recordId,
    bucket: f.bucket,
    range_start: f.rangeStart,
    range_end: f.rangeEnd,
    sources: f.sources,
    items: f.items,
    due_at: f.dueAt,
  }));
  if (rows.length === 0) return 0;
  const now = new Date(options.now);
  const result = await sql`
    insert into validic_sync.push_fetches as f
      (org_id, object, mode, user_id, record_id, bucket, range_start, range_end, sources, items,
       first_item_at, last_item_at, due_at, notification_id)
    select x.org_id, x.object, x.mode, x.user_id, x.record_id, x.bucket, x.range_start, x.range_end,
           x.sources, x.items, ${now}, ${now}, x.due_at, ${options.notificationId ?? null}::bigint
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(
      org_id text, object text, mode text, user_id text, record_id text, bucket text,
      range_start timestamptz, range_end timestamptz, sources text[], items integer, due_at timestamptz)
    on conflict (org_id, object, mode, user_id, record_id, bucket) where state = 'pending'
    do update set
      range_start = least(f.range_start, excluded.range_start),
      range_end = greatest(f.range_end, excluded.range_end),
      sources = case when f.sources is null or excluded.sources is null then null
        else array(select distinct s from unnest(f.sources || excluded.sources) as s order by s) end,
      items = f.items + excluded.items,
      last_item_at = greatest(f.last_item_at, excluded.last_item_at),
      due_at = case when f.mode = 'refused' then greatest(f.due_at, excluded.due_at)
        else least(f.due_at, excluded.due_at) end,
      notification_id = coalesce(excluded.notification_id, f.notification_id)`.execute(db);
  return Number(result.numAffectedRows ?? rows.length);
}

/** A claimed row: what its legacy.fetch job reads. */
export interface ClaimedPushFetch {
  id: string;
  orgId: string;
  object: string;
  mode: PushFetchMode;
  userId: string;
  recordId: string;
  rangeStart: Date | null;
  rangeEnd: Date | null;
  sources: string[] | null;
  items: number;
  claims: number;
}

/** What the drain's gate is decided from (counted under the org's drain lock). */
export interface PushDrainCounts {
  /**
   * Requests of the fetches claimed in the gate's window: a finished fetch counts its pages, others
   * their planned requests.
   */
  claimedInWindow: number;
  /** Planned requests of the fetches queued and not finished (and not yet taken as lost). */
  inFlight: number;
  /** When the last fetch was claimed (ms), null if never. */
  lastClaimAt: number | null;
}

export interface ClaimPushFetchesInput {
  orgId: string;
  now: number;
  /** The gate's window (ms): counts claims over it. */
  windowMs: number;
  /** A queued fetch not finished after this long is taken as lost and claimed again. */
  lostAfterMs: number;
  /** A fetch lost this many times fails instead (`error` says so). */
  maxClaims: number;
  /** How many requests to claim now, from the counts (fetches are claimed by their planned requests). */
  allowance: (counts: PushDrainCounts) => number;
}

export interface ClaimPushFetchesResult {
  counts: PushDrainCounts;
  /** Requests the allowance permitted; the claimed fetches plan at most this many. */
  allowed: number;
  claimed: ClaimedPushFetch[];
  /** Lost too often: failed now. */
  gaveUp: number;
}

const toDate = (value: unknown) => (value === null || value === undefined ? null : new Date(value as string));

/**
 * Claims what the allowance permits, in ONE transaction under a per-org advisory lock, so two drains
 * (a scheduled tick and a kick) never both spend the same window: fetches lost in the queue first, then
 * the latest windows of refused minutes (nothing else reads what those notifications announced, and one
 * window covers all of them), then the other pending ones by due time (oldest first), as long as their
 * planned requests add up to no more than the allowance. Claimed rows become `queued`.
 */
export async function claimPushFetches(
  db: Kysely<Database>,
  input: ClaimPushFetchesInput,
): Promise<ClaimPushFetchesResult> {
  const now = new Date(input.now);
  const windowStart = new Date(input.now - input.windowMs);
  const lostBefore = new Date(input.now - input.lostAfterMs);
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('validic_sync.push_fetches'), hashtext(${input.orgId}))`.execute(
      trx,
    );
    const gaveUp = await sql`
      update validic_sync.push_fetches set state = 'failed', done_at = ${now},
        error = 'queued ' || claims || ' times and never finished (the job was lost or kept failing)'
      where org_id = ${input.orgId} and state = 'queued' and claimed_at < ${lostBefore}
        and claims >= ${input.maxClaims}`.execute(trx);
    const c = await sql<{ window: number; in_flight: number; last: string | null }>`
      select
        (select coalesce(sum(coalesce(requests, planned_requests)), 0)::int from validic_sync.push_fetches
          where org_id = ${input.orgId} and claimed_at > ${windowStart}) as window,
        (select coalesce(sum(planned_requests), 0)::int from validic_sync.push_fetches
          where org_id = ${input.orgId} and state = 'queued' and claimed_at >= ${lostBefore}) as in_flight,
        (select max(claimed_at) from validic_sync.push_fetches
          where org_id = ${input.orgId} and claimed_at is not null) as last`.execute(trx);
    const row = c.rows[0]!;
    const counts: PushDrainCounts = {
      claimedInWindow: row.window,
      inFlight: row.in_flight,
      lastClaimAt: row.last === null ? null : toDate(row.last)!.getTime(),
    };
    const allowed = Math.max(0, Math.floor(input.allowance(counts)));
    if (allowed === 0) return { counts, allowed, claimed: [], gaveUp: Number(gaveUp.numAffectedRows ?? 0) };
    // In the drain's order, as many as fit: the running sum of planned requests within the allowance
    // (each candidate plans at least one, so `allowed` rows of each kind are enough to look at).
    const ids = await sql<{ id: string }>`
      select id from (
        select id, sum(planned_requests) over (order by rank, at, id) as running from (
          (select id, planned_requests, 0 as rank, claimed_at as at from validic_sync.push_fetches
            where org_id = ${input.orgId} and state = 'queued' and claimed_at < ${lostBefore}
            order by claimed_at limit ${allowed})
          union all
          (select id, planned_requests, case when mode = 'refused' then 1 else 2 end as rank, due_at as at
            from validic_sync.push_fetches
            where org_id = ${input.orgId} and state = 'pending' and due_at <= ${now}
            order by (mode <> 'refused'), due_at, id limit ${allowed})
        ) candidates
      ) ranked
      where running <= ${allowed}`.execute(trx);
    if (ids.rows.length === 0)
      return { counts, allowed, claimed: [], gaveUp: Number(gaveUp.numAffectedRows ?? 0) };
    const claimed = await sql<{
      id: string;
      org_id: string;
      object: string;
      mode: PushFetchMode;
      user_id: string;
      record_id: string;
      range_start: string | null;
      range_end: string | null;
      sources: string[] | null;
      items: number;
      claims: number;
    }>`
      update validic_sync.push_fetches
      set state = 'queued', claims = claims + 1, claimed_at = ${now}
      where id = any(${ids.rows.map((r) => String(r.id))}::bigint[])
      returning id::text as id, org_id, object, mode, user_id, record_id, range_start, range_end, sources,
        items, claims`.execute(trx);
    return {
      counts,
      allowed,
      gaveUp: Number(gaveUp.numAffectedRows ?? 0),
      claimed: claimed.rows
        .map((r) => ({
          id: r.id,
          orgId: r.org_id,
          object: r.object,
          mode: r.mode,
          userId: r.user_id,
          recordId: r.record_id,
          rangeStart: toDate(r.range_start),
          rangeEnd: toDate(r.range_end),
          sources: r.sources,
          items: r.items,
          claims: r.claims,
        }))
        .sort((a, b) => Number(a.id) - Number(b.id)),
    };
  });
}

/** The fetch loaded what it read: done, with the requests it took. */
export async function finishPushFetch(
  db: Kysely<Database>,
  id: string,
  outcome: { requests: number; at?: Date },
): Promise<void> {
  await sql`
    update validic_sync.push_fetches
    set state = 'done', done_at = ${outcome.at ?? new Date()}, requests = ${Math.max(1, outcome.requests)}, error = null
    where id = ${id}::bigint and state in ('queued', 'failed')`.execute(db);
}

/** The fetch failed for good (a permanent error, or its last attempt): kept with the reason. */
export async function failPushFetch(
  db: Kysely<Database>,
  id: string,
  error: string,
  at: Date = new Date(),
): Promise<void> {
  await sql`
    update validic_sync.push_fetches
    set state = 'failed', done_at = ${at}, error = ${redactKnownSecrets(error).slice(0, 4000)}
    where id = ${id}::bigint and state = 'queued'`.execute(db);
}

/** The backlog of one org as of `now`: what the planner, `status` and `/metrics` show. */
export interface PushBacklog {
  pending: number;
  /** Pending and already due. */
  due: number;
  queued: number;
  failed: number;
  /** Requests the pending fetches plan (each at least one). */
  pendingRequests: number;
  /** Arrival of the oldest pending fetch's first item (ms), null when none is pending. */
  oldestPendingAt: number | null;
  /** Requests of the fetches claimed in the last hour (finished ones count their pages, others their plan). */
  claimedLastHour: number;
  /** Fetches finished in the last hour. */
  doneLastHour: number;
  /**
   * Push requests refused (any refusal) in the last hour, and the minutes they fell in: the org's own,
   * and those whose org could not be told (the listener's, a shared-secret push's).
   */
  refusedLastHour: number;
  refusedMinutesLastHour: number;
}

export async function readPushBacklog(
  db: Kysely<Database>,
  orgId: string,
  now: number,
): Promise<PushBacklog> {
  const hourAgo = new Date(now - 3_600_000);
  const at = new Date(now);
  const refusalKeys = [orgId, LISTENER_REFUSAL_KEY, SHARED_SECRET_REFUSAL_KEY];
  const r = await sql<{
    pending: number;
    pending_requests: number;
    due: number;
    queued: number;
    failed: number;
    oldest: string | null;
    claimed: number;
    done: number;
    refused: number;
    refused_minutes: number;
  }>`
    select
      (select count(*)::int from validic_sync.push_fetches where org_id = ${orgId} and state = 'pending') as pending,
      (select coalesce(sum(planned_requests), 0)::int from validic_sync.push_fetches
        where org_id = ${orgId} and state = 'pending') as pending_requests,
      (select count(*)::int from validic_sync.push_fetches
        where org_id = ${orgId} and state = 'pending' and due_at <= ${at}) as due,
      (select count(*)::int from validic_sync.push_fetches where org_id = ${orgId} and state = 'queued') as queued,
      (select count(*)::int from validic_sync.push_fetches where org_id = ${orgId} and state = 'failed') as failed,
      (select min(first_item_at) from validic_sync.push_fetches
        where org_id = ${orgId} and state = 'pending') as oldest,
      (select coalesce(sum(coalesce(requests, planned_requests)), 0)::int from validic_sync.push_fetches
        where org_id = ${orgId} and claimed_at > ${hourAgo}) as claimed,
      (select count(*)::int from validic_sync.push_fetches
        where org_id = ${orgId} and state = 'done' and done_at > ${hourAgo}) as done,
      (select coalesce(sum(refused), 0)::int from validic_sync.push_refusals
        where org_id = any(${refusalKeys}::text[]) and minute > ${new Date(now - 3_660_000)}) as refused,
      (select count(distinct minute)::int from validic_sync.push_refusals
        where org_id = any(${refusalKeys}::text[]) and minute > ${new Date(now - 3_660_000)}) as refused_minutes`.execute(
    db,
  );
  const row = r.rows[0]!;
  return {
    pending: row.pending,
    pendingRequests: row.pending_requests,
    due: row.due,
    queued: row.queued,
    failed: row.failed,
    oldestPendingAt: row.oldest === null ? null : toDate(row.oldest)!.getTime(),
    claimedLastHour: row.claimed,
    doneLastHour: row.done,
    refusedLastHour: row.refused,
    refusedMinutesLastHour: row.refused_minutes,
  };
}

/**
 * Deletes finished fetches (done or failed) and refused minutes older than `before`, in batches; pending
 * and queued fetches are never pruned. Returns the rows deleted.
 */
export async function prunePushFetches(
  db: Kysely<Database>,
  before: Date,
  options: { batchSize?: number; signal?: AbortSignal } = {},
): Promise<number> {
  const total = await deleteInBatches(options, async (batchSize) => {
    const deleted = await sql`
      delete from validic_sync.push_fetches where id in (
        select id from validic_sync.push_fetches where done_at < ${before} limit ${batchSize})`.execute(db);
    return Number(deleted.numAffectedRows ?? 0);
  });
  const refusals = await sql`delete from validic_sync.push_refusals where minute < ${before}`.execute(db);
  return total + Number(refusals.numAffectedRows ?? 0);
}

/** Records that a part of notification `id` was stored: its items processed up to `to`, `stored` more fetches. */

export async function recordPushRefusalMinute(
  trx: Executor,
  key: string,
  minute: Date,
  refused: number,
): Promise<void> {
  await sql`
    insert into validic_sync.push_refusals as r (org_id, minute, refused)
    values (${key}, ${minute}, ${refused})
    on conflict (org_id, minute) do update set refused = greatest(r.refused, excluded.refused)`.execute(trx);
}
