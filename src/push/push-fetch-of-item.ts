/**
 * What fetch a push item asks for, as a row of the durable queue (validic_sync.push_fetches), and how
 * rows with the same key merge (pure). Why and how: README.md, "`push-fetch-of-item.ts`".
 */
import type { LegacyObject } from '../legacy/legacy-objects.ts';
import type { PushItem } from './push-items.ts';

export type PushFetchMode = 'activity' | 'updated' | 'record' | 'refused';

/** One pending fetch to store (or to merge into the pending row of the same key). */
export interface PushFetchInput {
  orgId: string;
  object: LegacyObject;
  mode: PushFetchMode;
  /** Service user `_id`; '' for an org-level read. */
  userId: string;
  /** Mode `record`: the record `_id`; '' otherwise. */
  recordId: string;
  /** Modes `updated` and `refused`: the UTC hour of the window (`2026-03-15T12`); '' otherwise. */
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

export interface PushFetchTiming {
  /** Arrival time of the notification. */
  now: number;
  /** `push.coalesceSeconds` in ms: items of one window of this length are due together, at its end. */
  coalesceMs: number;
  /** Half-width of the latest window around an announced `last_updated` (the legacy overlap, ≥ 1 minute). */
  updatedMarginMs: number;
}

const MINUTE_MS = 60_000;

/** End of the coalescing window `now` falls in (now itself without a window). */
export function coalescedDueAt(now: number, coalesceMs: number): number {
  return coalesceMs > 0 ? (Math.floor(now / coalesceMs) + 1) * coalesceMs : now;
}

const iso = (ms: number) => new Date(ms).toISOString();
const hourOf = (ms: number) => iso(ms).slice(0, 13);

export function pushFetchOfItem(item: PushItem, orgId: string, timing: PushFetchTiming): PushFetchInput {
  const base = {
    orgId,
    object: item.object,
    userId: item.userId ?? '',
    recordId: '',
    bucket: '',
    sources: null,
    items: 1,
    dueAt: iso(coalescedDueAt(timing.now, timing.coalesceMs)),
  };
  if (item.activityDate) {
    return {
      ...base,
      mode: 'activity',
      rangeStart: item.activityDate,
      rangeEnd: item.activityDate,
      sources: item.source ? [item.source] : null,
    };
  }
  if (item.recordId && item.userId) {
    return { ...base, mode: 'record', recordId: item.recordId, rangeStart: null, rangeEnd: null };
  }
  if (item.lastUpdated) {
    const at = Date.parse(item.lastUpdated);
    return {
      ...base,
      mode: 'updated',
      bucket: hourOf(at),
      rangeStart: iso(at - timing.updatedMarginMs),
      rangeEnd: iso(at + timing.updatedMarginMs),
    };
  }
  return { ...base, mode: 'updated', rangeStart: null, rangeEnd: null };
}

/**
 * The fetches that cover a minute whose notifications were refused: one org-level latest window per
 * object, from `lagMs` before the minute (records are updated before they are announced) to its end,
 * due once the minute is over.
 */
export function refusedMinuteFetches(input: {
  orgId: string;
  objects: readonly LegacyObject[];
  minuteStart: number;
  lagMs: number;
  coalesceMs: number;
}): PushFetchInput[] {
  const end = input.minuteStart + MINUTE_MS;
  return input.objects.map((object) => ({
    orgId: input.orgId,
    object,
    mode: 'refused',
    userId: '',
    recordId: '',
    bucket: hourOf(input.minuteStart),
    rangeStart: iso(input.minuteStart - input.lagMs),
    rangeEnd: iso(end),
    sources: null,
    items: 1,
    dueAt: iso(end + input.coalesceMs),
  }));
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
