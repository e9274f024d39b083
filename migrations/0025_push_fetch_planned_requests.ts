/**
 * 0025: what a push fetch costs, bounded and counted.
 *
 * - `validic_sync.push_fetches.planned_requests` (generated): the list requests a fetch makes before it
 *   has run: an `activity` fetch one per 30 days of its range with a day either side (the retrieval's
 *   margin), every other mode one. push.drain counts a claimed fetch by it until the fetch finishes and
 *   says how many it took (`requests`).
 * - `activity` fetches stored before this migration (bucket empty) could span any range: each pending
 *   one becomes one fetch per 28-day window (bucket: the window's first UTC date, windows aligned to
 *   the epoch) of its range clamped to the last year and a day and the present and a day, the way the
 *   worker now stores new ones (the first piece keeps the item count, the others count none); a queued
 *   one planning more than one request is marked failed with the reason and its pieces stored pending,
 *   so a lost one comes back bounded.
 * - Comments: a refused minute is a minute with refusals of any kind, not only 429.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
const fetches = 'validic_sync.push_fetches';
const refusals = 'validic_sync.push_refusals';

const DAY_S = 86_400;
/** One list request covers 30 days; an activity fetch adds a day either side of its range. */
const SPAN_S = 30 * DAY_S;
const MARGIN_S = DAY_S;
/** A bucket's range plus the margins is one request. */
const BUCKET_S = SPAN_S - 2 * MARGIN_S;

const DAY_MS = DAY_S * 1000;
const BUCKET_MS = BUCKET_S * 1000;
const iso = (ms: number) => new Date(ms).toISOString();

interface OldFetch {
  id: string;
  state: 'pending' | 'queued';
  org_id: string;
  object: string;
  user_id: string;
  record_id: string;
  range_start: Date | string;
  range_end: Date | string;
  sources: string[] | null;
  items: number;
  first_item_at: Date | string;
  last_item_at: Date | string;
  due_at: Date | string;
  notification_id: string | null;
}

interface Piece {
  org_id: string;
  object: string;
  user_id: string;
  record_id: string;
  bucket: string;
  range_start: number;
  range_end: number;
  sources: string[] | null;
  items: number;
  first_item_at: number;
  last_item_at: number;
  due_at: number;
  notification_id: string | null;
}

const ms = (value: Date | string) => new Date(value).getTime();

/** One piece per 28-day window of the row's range, clamped to the last year and a day and the present and a day. */
function piecesOf(row: OldFetch, now: number): Piece[] {
  const clamp = (t: number) => Math.min(Math.max(t, now - 366 * DAY_MS), now + DAY_MS);
  const start = clamp(ms(row.range_start));
  const end = clamp(ms(row.range_end));
  const pieces: Piece[] = [];
  for (let b = Math.floor(start / BUCKET_MS); b <= Math.floor(end / BUCKET_MS); b++) {
    pieces.push({
      org_id: row.org_id,
      object: row.object,
      user_id: row.user_id,
      record_id: row.record_id,
      bucket: iso(b * BUCKET_MS).slice(0, 10),
      range_start: Math.max(start, b * BUCKET_MS),
      range_end: Math.min(end, (b + 1) * BUCKET_MS - 1),
      sources: row.sources,
      items: pieces.length === 0 ? row.items : 0,
      first_item_at: ms(row.first_item_at),
      last_item_at: ms(row.last_item_at),
      due_at: ms(row.due_at),
      notification_id: row.notification_id,
    });
  }
  return pieces;
}

/** Pieces of one key and bucket merged as the store merges items into a pending fetch. */
function merge(a: Piece, b: Piece): Piece {
  return {
    ...a,
    range_start: Math.min(a.range_start, b.range_start),
    range_end: Math.max(a.range_end, b.range_end),
    sources:
      a.sources === null || b.sources === null ? null : [...new Set([...a.sources, ...b.sources])].sort(),
    items: a.items + b.items,
    first_item_at: Math.min(a.first_item_at, b.first_item_at),
    last_item_at: Math.max(a.last_item_at, b.last_item_at),
    due_at: Math.min(a.due_at, b.due_at),
    notification_id: b.notification_id ?? a.notification_id,
  };
}

/**
 * Activity fetches stored before this migration, bounded: pending ones are replaced by their pieces; a
 * queued one planning more than one request is marked failed with the reason (its job may still run
 * the whole range once) and its pieces stored pending, so a lost one comes back bounded.
 */
async function splitOldActivityFetches(db: Kysely<any>): Promise<void> {
  const old = await sql<OldFetch>`
    select id::text as id, state, org_id, object, user_id, record_id, range_start, range_end, sources,
      items, first_item_at, last_item_at, due_at, notification_id::text as notification_id
    from validic_sync.push_fetches
    where mode = 'activity' and bucket = '' and range_start is not null and range_end is not null
      and (state = 'pending' or (state = 'queued' and planned_requests > 1))`.execute(db);
  if (old.rows.length === 0) return;
  const now = Date.now();
  const byKey = new Map<string, Piece>();
  for (const piece of old.rows.flatMap((row) => piecesOf(row, now))) {
    const key = [piece.org_id, piece.object, piece.user_id, piece.record_id, piece.bucket].join('\u0001');
    const seen = byKey.get(key);
    byKey.set(key, seen ? merge(seen, piece) : piece);
  }
  const pending = old.rows.filter((r) => r.state === 'pending').map((r) => r.id);
  const queued = old.rows.filter((r) => r.state === 'queued').map((r) => r.id);
  await sql`delete from validic_sync.push_fetches where id = any(${pending}::bigint[])`.execute(db);
  await sql`update validic_sync.push_fetches set state = 'failed', done_at = ${new Date(now)},
      error = 'stored before push fetches were bounded: replaced by one fetch per 28-day window'
    where id = any(${queued}::bigint[])`.execute(db);
  const rows = [...byKey.values()].map((p) => ({
    ...p,
    range_start: iso(p.range_start),
    range_end: iso(p.range_end),
    first_item_at: iso(p.first_item_at),
    last_item_at: iso(p.last_item_at),
    due_at: iso(p.due_at),
  }));
  await sql`
    insert into validic_sync.push_fetches (org_id, object, mode, user_id, record_id, bucket, range_start,
      range_end, sources, items, first_item_at, last_item_at, due_at, notification_id)
    select x.org_id, x.object, 'activity', x.user_id, x.record_id, x.bucket, x.range_start, x.range_end,
      x.sources, x.items, x.first_item_at, x.last_item_at, x.due_at, x.notification_id
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(
      org_id text, object text, user_id text, record_id text, bucket text, range_start timestamptz,
      range_end timestamptz, sources text[], items integer, first_item_at timestamptz,
      last_item_at timestamptz, due_at timestamptz, notification_id bigint)`.execute(db);
}

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    `alter table ${fetches} add column planned_requests integer not null generated always as (
      case when mode = 'activity' and range_start is not null and range_end is not null
        then greatest(1, ceil((extract(epoch from (range_end - range_start)) + ${2 * MARGIN_S}) / ${SPAN_S}))::integer
        else 1 end) stored`,
    `comment on column ${fetches}.planned_requests is ${quote('Requests the fetch plans before it runs (activity: one per 30 days of its range with a day either side; other modes: one). push.drain counts a claimed fetch by it until it finishes (then by requests).')}`,
    `comment on column ${fetches}.bucket is ${quote("activity: the first UTC date of the 28-day window of activity dates it covers (one list request); updated and refused: the UTC hour of the window (keeps one fetch's window within about an hour); empty otherwise.")}`,
    `comment on column ${fetches}.mode is ${quote("activity: the user's object list by activity date (the provider's documented item); updated: a latest window by last_updated; record: one record by id; refused: an org-level latest window over minutes in which push requests were refused (any refusal: the per-minute cap, a stale timestamp, a replayed signature, an oversized body, the listener's connection limits).")}`,
    `comment on table ${refusals} is ${quote('Minutes in which push requests were refused (the per-minute cap, a stale timestamp or replayed signature, an oversized body, a connection the listener refused or cut). A refused notification may be lost: each such minute queues an org-level legacy latest pass (push_fetches, mode refused) unless legacy.sync runs for the org.')}`,
    `comment on column ${refusals}.org_id is ${quote('Validic organization the refusals were counted against; (shared secret) or (listener) when it could not be told (then every organization is read again).')}`,
    `comment on column ${refusals}.refused is ${quote('Requests refused in that minute, fleet-wide (recorded at the first refusal and every 100th, so up to 99 short).')}`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
  await splitOldActivityFetches(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`alter table ${fetches} drop column if exists planned_requests`).execute(db);
}
